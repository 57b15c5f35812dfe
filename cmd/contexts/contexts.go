// Package contexts is the context command group: the named contexts of the config file,
// which one is in use, and switching to another (docs/design.md §4).
package contexts

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/config"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/output"
)

const contextLong = `A context is a named set of connection settings in the config file
($XDG_CONFIG_HOME/fieldwork/config.yaml, --config or FIELDWORK_CONFIG): brokers, TLS, SASL,
the store's DSN and the schema registry. The one in use is --context, else FIELDWORK_CONTEXT, else the file's
current_context. Flags and FIELDWORK_* variables still beat each of its settings.

  context list          every context; * marks the one in use
  context current       the name of the context in use (none: says so, exit 0)
  context show [NAME]   a context's settings (default the one in use); secrets redacted
  context use NAME      make NAME the file's current_context

Passwords, tokens and client secrets are never written in the file (it names the variable or
file that holds them); what a DSN or a token URL holds is shown redacted.`

// NewCmdContext is the context group.
func NewCmdContext(f *cmdutil.Factory) *cobra.Command {
	cmd := cmdutil.NewGroup("context <command>", "List, show and switch the config file's named contexts", contextLong,
		newCmdList(f), newCmdCurrent(f), newCmdShow(f), newCmdUse(f))
	return cmd
}

// contextView is one context as shown: its settings redacted.
type contextView struct {
	Name    string `json:"name"`
	Current bool   `json:"current"`
	config.Context
}

// session is what each context subcommand reads: the config file, the context in use and
// where that choice comes from, and the printer of -o.
type session struct {
	path          string
	file          *config.File
	current, from string
	p             *output.Printer
}

// run is the one run shape of the group: load the session, then do fn with the arguments.
func run(f *cmdutil.Factory, fn func(s *session, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		path, file, err := f.ConfigFile()
		if err != nil {
			return err
		}
		p, err := f.Printer()
		if err != nil {
			return err
		}
		s := &session{path: path, file: file, p: p}
		s.current, s.from = config.Current(f.Settings().Conn, f.Getenv, file)
		return fn(s, args)
	}
}

func newCmdList(f *cmdutil.Factory) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "Every context of the config file; * marks the one in use",
		Args:    cmdutil.NoArgs,
		RunE: run(f, func(s *session, _ []string) error {
			var views []contextView
			for _, n := range s.file.Names() {
				views = append(views, contextView{Name: n, Current: n == s.current, Context: s.file.Contexts[n].Redacted()})
			}
			empty := "no contexts in " + s.path
			if _, err := os.Stat(s.path); errors.Is(err, fs.ErrNotExist) {
				empty = "no config file, so no contexts: looked for " + s.path + " (--config, else FIELDWORK_CONFIG, else $XDG_CONFIG_HOME/fieldwork/config.yaml); connection settings come from flags and FIELDWORK_* variables"
			}
			return output.List(s.p, views, listColumns, empty)
		}),
	}
}

var listColumns = []output.Column[contextView]{
	{Name: "current", Value: func(v contextView) string {
		if v.Current {
			return "*"
		}
		return ""
	}},
	{Name: "name", Value: func(v contextView) string { return v.Name }},
	{Name: "brokers", Value: func(v contextView) string { return cmdutil.OrDash(strings.Join(v.Brokers, ",")) }},
	{Name: "dsn", Value: func(v contextView) string { return cmdutil.OrDash(v.DSN) }},
}

func newCmdCurrent(f *cmdutil.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "current",
		Short: "The name of the context in use, and where that choice comes from",
		Args:  cmdutil.NoArgs,
		RunE: run(f, func(s *session, _ []string) error {
			if s.current == "" {
				// An answer, not a failure (exit 0): stdout stays empty for a shell prompt, and
				// -o json says null.
				fmt.Fprintf(f.Streams.ErrText(), "no context in use: %s sets no current_context, and neither --context nor FIELDWORK_CONTEXT is given (fieldwork context use NAME sets one)\n", s.path)
				if f.Settings().OutputFormat == "" || s.p.Format == output.FormatTable {
					return nil
				}
				return s.p.Object(struct {
					Name *string `json:"name"`
					From *string `json:"from"`
				}{}, nil)
			}
			// The bare name unless -o asks for more: what a shell prompt or a script reads.
			if f.Settings().OutputFormat == "" || s.p.Format == output.FormatTable {
				fmt.Fprintln(f.Streams.Out, s.current)
				return nil
			}
			return s.p.Object(struct {
				Name string `json:"name"`
				From string `json:"from"`
			}{s.current, s.from}, []output.Section{{Fields: [][2]string{{"name", s.current}, {"from", s.from}}}})
		}),
	}
}

func newCmdShow(f *cmdutil.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "show [NAME]",
		Short: "A context's settings, secrets redacted (default the one in use)",
		Args:  cmdutil.MaxArgs(1, "the name of one context"),
		RunE: run(f, func(s *session, args []string) error {
			name := s.current
			if len(args) == 1 {
				name = args[0]
			}
			if name == "" {
				return fwerr.Usagef("no context in use: name one (fieldwork context show NAME; known: %s)", s.file.Known())
			}
			c, err := s.file.Lookup(name, s.path)
			if err != nil {
				return err
			}
			v := contextView{Name: name, Current: name == s.current, Context: c.Redacted()}
			return s.p.Object(v, showSections(v))
		}),
	}
}

func showSections(v contextView) []output.Section {
	c := v.Context
	fields := [][2]string{
		{"name", v.Name}, {"in use", fmt.Sprint(v.Current)},
		{"brokers", cmdutil.OrDash(strings.Join(c.Brokers, ","))}, {"dsn", cmdutil.OrDash(c.DSN)},
	}
	tls, insecure := "", ""
	if c.TLS.Enabled || c.TLS.CAFile != "" || c.TLS.CertFile != "" || c.TLS.PKCS12File != "" {
		tls = "on"
	}
	if c.TLS.InsecureSkipVerify {
		insecure = "true"
	}
	// Only the settings the context has, in this order.
	for _, kv := range [][2]string{
		{"dsn_password_env", c.DSNPasswordEnv}, {"dsn_password_file", c.DSNPasswordFile},
		{"tls", tls}, {"tls.ca_file", c.TLS.CAFile}, {"tls.cert_file", c.TLS.CertFile},
		{"tls.key_file", c.TLS.KeyFile}, {"tls.pkcs12_file", c.TLS.PKCS12File},
		{"tls.key_password_env", c.TLS.KeyPasswordEnv}, {"tls.key_password_file", c.TLS.KeyPasswordFile},
		{"tls.server_name", c.TLS.ServerName}, {"tls.insecure_skip_verify", insecure},
		{"sasl.mechanism", c.SASL.Mechanism}, {"sasl.username", c.SASL.Username},
		{"sasl.password_env", c.SASL.PasswordEnv}, {"sasl.password_file", c.SASL.PasswordFile},
		{"sasl.token_env", c.SASL.TokenEnv}, {"sasl.token_file", c.SASL.TokenFile},
		{"sasl.token_url", c.SASL.TokenURL}, {"sasl.client_id", c.SASL.ClientID},
		{"sasl.client_secret_env", c.SASL.ClientSecretEnv}, {"sasl.client_secret_file", c.SASL.ClientSecretFile},
		{"sasl.scope", c.SASL.Scope},
		{"schema_registry.url", c.SchemaRegistry.URL}, {"schema_registry.username", c.SchemaRegistry.Username},
		{"schema_registry.password_env", c.SchemaRegistry.PasswordEnv}, {"schema_registry.password_file", c.SchemaRegistry.PasswordFile},
		{"schema_registry.token_env", c.SchemaRegistry.TokenEnv}, {"schema_registry.token_file", c.SchemaRegistry.TokenFile},
		{"schema_registry.tls.ca_file", c.SchemaRegistry.TLS.CAFile},
	} {
		if kv[1] != "" {
			fields = append(fields, kv)
		}
	}
	return []output.Section{{Title: "Context " + v.Name, Fields: fields}}
}

func newCmdUse(f *cmdutil.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "use NAME",
		Short: "Make NAME the config file's current_context (that line alone changes)",
		Args:  cmdutil.ExactArgs(1, "the name of the context to use"),
		RunE: run(f, func(s *session, args []string) error {
			if err := config.Use(s.path, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(f.Streams.ErrOut, "current context: %s (in %s)\n", args[0], s.path)
			return nil
		}),
	}
}
