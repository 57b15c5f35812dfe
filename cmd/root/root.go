// Package root is fieldwork's command tree: the root command, its persistent flags, the one
// list of top-level commands, and Main, where errors become exit codes (and nowhere else).
// Each command group lives in a package of its own under cmd/; what they share is cmdutil.
package root

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/cmd/consume"
	"github.com/fieldwork/fieldwork/cmd/contexts"
	"github.com/fieldwork/fieldwork/cmd/db"
	"github.com/fieldwork/fieldwork/cmd/demo"
	"github.com/fieldwork/fieldwork/cmd/dev"
	"github.com/fieldwork/fieldwork/cmd/dlq"
	"github.com/fieldwork/fieldwork/cmd/docs"
	"github.com/fieldwork/fieldwork/cmd/groups"
	"github.com/fieldwork/fieldwork/cmd/inspect"
	"github.com/fieldwork/fieldwork/cmd/processed"
	"github.com/fieldwork/fieldwork/cmd/replay"
	"github.com/fieldwork/fieldwork/cmd/triage"
	"github.com/fieldwork/fieldwork/cmd/version"
	"github.com/fieldwork/fieldwork/internal/config"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/output"
	"github.com/fieldwork/fieldwork/internal/timespec"
)

// Exit codes, as docs/design.md §4 defines them.
const (
	ExitOK          = 0
	ExitError       = 1
	ExitUsage       = 2
	ExitCheckFailed = 3
	ExitConnect     = 4
	ExitDenied      = 5
	ExitCancelled   = 6
	ExitPartial     = 7
	ExitTripped     = 8
	ExitNotFound    = 9
	ExitInterrupted = 130
)

// Main runs fieldwork with the process's arguments and returns its exit code.
func Main() int {
	ctx, stop := NotifyContext(context.Background())
	defer stop()
	f := cmdutil.NewFactory()
	root := NewCmdRoot(f)
	ran, err := root.ExecuteContextC(ctx)
	return ExitCode(ctx, f, ran, err)
}

// SignalCause is the cause of a context NotifyContext cancelled: the signal received.
type SignalCause struct{ Signal os.Signal }

func (s SignalCause) Error() string { return s.Signal.String() + " signal received" }

// NotifyContext is a context cancelled, with its SignalCause, at the first SIGINT or SIGTERM
// (later ones are caught too: a command that wants a second signal to abort asks for it).
// stop releases it.
func NotifyContext(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		select {
		case s := <-ch:
			cancel(SignalCause{Signal: s})
		case <-ctx.Done():
		}
	}()
	return ctx, func() { signal.Stop(ch); cancel(nil) }
}

// interruptedByCtrlC says whether ctx was cancelled by SIGINT (NotifyContext).
func interruptedByCtrlC(ctx context.Context) bool {
	var sc SignalCause
	return errors.As(context.Cause(ctx), &sc) && sc.Signal == syscall.SIGINT
}

// ExitCode prints err (if any) to stderr and maps it to an exit code: the one place where
// errors become exit codes. ran is the command that ran (cobra's ExecuteC), ctx the context
// it ran with (cancelled by SIGINT or SIGTERM: NotifyContext).
//
// A command stopped by Ctrl-C (SIGINT) exits 130 whatever it returns: one that serves or
// follows until stopped (consume, dlq list --follow, dev) as much as one cut short. SIGTERM,
// a supervisor's stop, exits 130 only when it cut work short (an error): a service that
// drained and stopped cleanly exits 0.
func ExitCode(ctx context.Context, f *cmdutil.Factory, ran *cobra.Command, err error) int {
	if err == nil {
		if interruptedByCtrlC(ctx) {
			fmt.Fprintln(f.Streams.ErrText(), f.Streams.ErrStyles().Warn.Render("interrupted"))
			return ExitInterrupted
		}
		return ExitOK
	}
	kind := fwerr.KindOf(err)
	if !f.Settings().Running && kind == fwerr.KindError {
		kind = fwerr.KindUsage // cobra's own errors: unknown command, flag or argument count
	}
	if ctx.Err() != nil && (kind == fwerr.KindError || errors.Is(err, context.Canceled)) {
		kind = fwerr.KindInterrupted
	}
	st, errOut := f.Streams.ErrStyles(), f.Streams.ErrText()
	switch kind {
	case fwerr.KindInterrupted:
		fmt.Fprintln(errOut, st.Warn.Render("interrupted"))
		return ExitInterrupted
	case fwerr.KindCheck:
		fmt.Fprintln(errOut, st.Warn.Render("problems found: ")+err.Error())
		return ExitCheckFailed
	case fwerr.KindCancelled:
		fmt.Fprintln(errOut, st.Warn.Render("cancelled: ")+err.Error())
		return ExitCancelled
	case fwerr.KindPartial:
		fmt.Fprintln(errOut, st.Warn.Render("partial: ")+err.Error())
		return ExitPartial
	}
	fmt.Fprintln(errOut, st.Bad.Render("error: ")+err.Error())
	switch kind {
	case fwerr.KindUsage:
		if hint := cmdutil.ValueHint(err); hint != "" {
			fmt.Fprintln(errOut, strings.TrimPrefix(hint, "\n"))
		}
		if ran != nil {
			fmt.Fprintf(f.Streams.ErrOut, "Run '%s --help' for usage.\n", ran.CommandPath())
		}
		return ExitUsage
	case fwerr.KindConnect:
		return ExitConnect
	case fwerr.KindDenied:
		return ExitDenied
	case fwerr.KindTripped:
		return ExitTripped
	case fwerr.KindNotFound:
		return ExitNotFound
	}
	return ExitError
}

// NewCmdRoot builds the command tree.
func NewCmdRoot(f *cmdutil.Factory) *cobra.Command {
	// The persistent flags are the root's: bound here, read by every command through f.
	set := cmdutil.RootSettings(f)
	root := &cobra.Command{
		Use:   "fieldwork",
		Short: "Inspect dead letters, replay events and query processed-event markers of a Kafka event system",
		Long: `fieldwork is a toolkit for the people on call for a Kafka-based event system that runs
at-least-once with idempotent consumers: it inspects topics and dead-letter topics, replays
offset ranges or single events back into their source topics, queries the processed_events
tables consumers write, shows consumer groups and moves a stuck one past a poison record
without losing it, and runs a reference consumer.

Connection settings come from flags, then FIELDWORK_* environment variables, then the
current context of $XDG_CONFIG_HOME/fieldwork/config.yaml (fieldwork help environment).

Exit codes: 0 ok (also "nothing found"), 1 error, 2 usage, 3 a check found problems,
4 cannot connect or authenticate, 5 not authorized (the cluster's ACLs deny an operation),
6 cancelled at a confirmation prompt, 7 partial (piped output cut at a default limit),
8 tripped, 9 not found (a topic, partition, offset, group or run), 130 interrupted.`,
		Example: `  # The whole story (dead letters, a replay, the fix) in one process, with no setup:
  fieldwork demo
  # A sandbox broker and store seeded with sample events, to try every command on:
  fieldwork dev
  # Then, in another terminal, with the address fieldwork dev prints:
  export FIELDWORK_BROKERS=127.0.0.1:9092 FIELDWORK_DSN=sqlite:fieldwork-dev.db
  fieldwork dlq list --consumer task-projection
  fieldwork replay --topic tasks.dlq --dlq-reason rejected`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			set.Running = true
			if _, err := output.ParseFormat(set.OutputFormat, false); err != nil {
				return fwerr.Wrap(fwerr.KindUsage, err)
			}
			return nil
		},
	}
	root.SetIn(f.Streams.In)
	root.SetOut(f.Streams.Out)
	root.SetErr(f.Streams.ErrOut)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fwerr.Wrap(fwerr.KindUsage, cmdutil.FlagError(c, err))
	})

	pf := root.PersistentFlags()
	pf.StringSliceVar(&set.Conn.Brokers, "brokers", nil, "Kafka bootstrap brokers, comma-separated (env FIELDWORK_BROKERS)")
	pf.StringVar(&set.Conn.Context, "context", "", "named context from the config file (env FIELDWORK_CONTEXT)")
	pf.StringVar(&set.ConfigPath, "config", "", "config file (default $XDG_CONFIG_HOME/fieldwork/config.yaml; env FIELDWORK_CONFIG)")
	pf.StringVar(&set.Conn.DSN, "dsn", "", "dedup store: postgres://… or sqlite:PATH (env FIELDWORK_DSN)")
	pf.BoolVar(&set.Conn.TLS, "tls", false, "connect to brokers with TLS (env FIELDWORK_TLS)")
	pf.StringVar(&set.Conn.TLSCAFile, "tls-ca", "", "PEM file of CA certificates for the brokers (env FIELDWORK_TLS_CA)")
	pf.StringVar(&set.Conn.TLSCertFile, "tls-cert", "", "PEM client certificate (env FIELDWORK_TLS_CERT)")
	pf.StringVar(&set.Conn.TLSKeyFile, "tls-key", "", "PEM client key, plain or encrypted (env FIELDWORK_TLS_KEY)")
	pf.StringVar(&set.Conn.TLSPKCS12File, "tls-pkcs12", "", "PKCS#12 bundle of the client certificate and key (env FIELDWORK_TLS_PKCS12)")
	pf.StringVar(&set.Conn.TLSKeyPasswordFile, "tls-key-password-file", "", "file holding the password of an encrypted client key or PKCS#12 bundle (or env FIELDWORK_TLS_KEY_PASSWORD)")
	pf.StringVar(&set.Conn.TLSServerName, "tls-server-name", "", "server name to verify (env FIELDWORK_TLS_SERVER_NAME)")
	pf.BoolVar(&set.Conn.TLSInsecure, "tls-insecure-skip-verify", false, "do not verify the brokers' certificates")
	pf.StringVar(&set.Conn.SASLMechanism, "sasl-mechanism", "", "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or AWS_MSK_IAM (env FIELDWORK_SASL_MECHANISM)")
	pf.StringVar(&set.Conn.SASLUsername, "sasl-username", "", "SASL user (env FIELDWORK_SASL_USERNAME)")
	pf.StringVar(&set.Conn.SASLPasswordFile, "sasl-password-file", "", "file holding the SASL password (or env FIELDWORK_SASL_PASSWORD)")
	pf.StringVar(&set.Conn.SASLTokenFile, "sasl-token-file", "", "file holding a static OAUTHBEARER token (or env FIELDWORK_SASL_TOKEN; env FIELDWORK_SASL_TOKEN_FILE)")
	pf.StringVar(&set.Conn.SASLTokenURL, "sasl-token-url", "", "OAUTHBEARER token endpoint: fetch tokens with the client-credentials grant (env FIELDWORK_SASL_TOKEN_URL)")
	pf.StringVar(&set.Conn.SASLClientID, "sasl-client-id", "", "OAUTHBEARER client id at the token endpoint (env FIELDWORK_SASL_CLIENT_ID)")
	pf.StringVar(&set.Conn.SASLClientSecretFile, "sasl-client-secret-file", "", "file holding the OAUTHBEARER client secret (or env FIELDWORK_SASL_CLIENT_SECRET; env FIELDWORK_SASL_CLIENT_SECRET_FILE)")
	pf.StringVar(&set.Conn.SASLScope, "sasl-scope", "", "OAUTHBEARER scopes to ask the token endpoint for, space- or comma-separated (env FIELDWORK_SASL_SCOPE)")
	pf.StringVar(&set.Conn.SchemaRegistry, "schema-registry", "", "Confluent-compatible schema registry URL, to decode Avro, Protobuf and JSON Schema payloads (env FIELDWORK_SCHEMA_REGISTRY)")
	pf.StringVar(&set.Conn.SchemaRegistryUsername, "schema-registry-username", "", "schema registry basic-auth user (env FIELDWORK_SCHEMA_REGISTRY_USERNAME)")
	pf.StringVar(&set.Conn.SchemaRegistryPasswordFile, "schema-registry-password-file", "", "file holding the schema registry password (or env FIELDWORK_SCHEMA_REGISTRY_PASSWORD)")
	pf.StringVar(&set.Conn.SchemaRegistryTokenFile, "schema-registry-token-file", "", "file holding a schema registry bearer token (or env FIELDWORK_SCHEMA_REGISTRY_TOKEN)")
	pf.StringVar(&set.Conn.SchemaRegistryCAFile, "schema-registry-ca", "", "PEM file of CA certificates for an https schema registry (env FIELDWORK_SCHEMA_REGISTRY_CA)")
	pf.BoolVar(&set.Conn.SchemaRegistryInsecure, "schema-registry-insecure-skip-verify", false, "do not verify the schema registry's certificate")
	pf.StringVarP(&set.OutputFormat, "output", "o", "", "output format: table, json, jsonl, csv (default table on a terminal, jsonl when piped)")
	pf.BoolVar(&set.Wide, "wide", false, "show table cells whole instead of cutting the widest with … to fit the terminal (json, jsonl and csv are never cut)")
	pf.Var(timespec.NewDurationValue(&set.ConnectTimeout, kafka.DefaultConnectTimeout), "connect-timeout", "how long to wait for a broker or database to answer")
	_ = root.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(output.Formats, cobra.ShellCompDirectiveNoFileComp))
	_ = root.RegisterFlagCompletionFunc("sasl-mechanism", cobra.FixedCompletions(config.Mechanisms, cobra.ShellCompDirectiveNoFileComp))

	root.AddGroup(&cobra.Group{ID: "ops", Title: "Commands:"})
	root.SetHelpCommandGroupID("")
	root.SetCompletionCommandGroupID("")

	// The top-level commands, in the order they were registered before this list (cobra sorts
	// them by name for help; the order decides nothing else).
	for _, c := range []*cobra.Command{
		inspect.NewCmdInspect(f),
		dev.NewCmdDev(f, nil),
		version.NewCmdVersion(f, nil),
		consume.NewCmdConsume(f, nil),
		db.NewCmdDB(f),
		contexts.NewCmdContext(f),
		demo.NewCmdDemo(f, nil),
		dlq.NewCmdDLQ(f),
		docs.NewCmdDocs(f, nil),
		processed.NewCmdProcessed(f),
		replay.NewCmdReplay(f, nil),
		groups.NewCmdGroups(f),
		triage.NewCmdTriage(f, nil),
	} {
		c.GroupID = "ops"
		root.AddCommand(c)
	}
	cmdutil.RefuseEmptyValues(root)
	cmdutil.OneValueEach(root)
	installHelp(f, root)
	cmdutil.AddDynamicCompletion(f, root)
	cmdutil.PortableBashCompletion(root)
	return root
}
