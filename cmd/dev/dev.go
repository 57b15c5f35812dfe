// Package dev is `fieldwork dev`, the sandbox of an embedded broker and store.
package dev

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/demo"
	"github.com/fieldwork/fieldwork/internal/devstack"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/output"
	"github.com/fieldwork/fieldwork/internal/redact"
	"github.com/fieldwork/fieldwork/internal/wording"
)

// DefaultDevDSN is the store `fieldwork dev` creates when --dsn is not given.
const DefaultDevDSN = "sqlite:./fieldwork-dev.db"

// DevOptions are the inputs of `fieldwork dev`.
type DevOptions struct {
	Streams *output.Streams
	// Format is the -o value as given ("" when not given).
	Format     string
	Port       int
	DSN        string
	Partitions int
	Seed       uint64
	NoSeed     bool
	// DeadLetters seeds tasks.dlq as if a consumer had already met the poison records.
	DeadLetters bool
	// Fresh starts the store over (devstack.Options.Fresh).
	Fresh bool
	// NoConsume leaves tasks unconsumed: the buggy release of the projection does not run.
	NoConsume bool
}

// NewCmdDev builds `fieldwork dev`; runF, when set, replaces the run (for tests of flag
// parsing).
func NewCmdDev(f *cmdutil.Factory, runF func(context.Context, *DevOptions) error) *cobra.Command {
	opts := &DevOptions{Streams: f.Streams}
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Serve an embedded broker and store seeded with sample events",
		Long: `Serve a sandbox until interrupted: an in-process Kafka-protocol broker (franz-go's kfake)
on 127.0.0.1:--port with the topics tasks and tasks.dlq, and an SQLite dedup store, created
and migrated. tasks is seeded with task events in CloudEvents structured mode keyed by
aggregate id, including producer-retry duplicates, stale versions re-emitted later and a few
poison records. Then the incident: release 1.4 of the bundled projection, which has a bug
(it rejects task.reopened for good), consumes tasks once as group task-projection, as
fieldwork demo's second step does: the poison is dead-lettered to tasks.dlq as malformed,
the reopened events as rejected. The fix is the bundled projection itself: replay the
rejected dead letters, run fieldwork consume --handler projection (as printed), and dlq list
shows them resolved. --no-consume skips the incident (tasks.dlq stays empty); --dead-letters
instead seeds a dead letter for each poison record, in fieldwork's convention, as if a
consumer had run. tasks.avro holds the same stream in Avro, in the Confluent wire format,
its schema in an in-memory schema registry (franz-go's srfake) on 127.0.0.1 whose URL is
printed: pass it as --schema-registry to see the values decoded. Any fieldwork command
pointed at it with --brokers works.

The broker keeps everything in memory (stopping it forgets the topics) and has no
authentication, so it only listens on loopback. The store file stays: a later fieldwork dev
keeps its markers and journaled replay runs, and warns that it holds some, since the events
they name are not those of the new broker. --fresh deletes the store file first and starts
over with an empty one.

The store is the global --dsn flag (sqlite:PATH only); FIELDWORK_DSN and contexts are not
read, so the sandbox never touches a configured store. --seed chooses the sample stream:
the same seed gives the same event ids and payloads.

What it serves is printed to stdout on a terminal, else to stderr; with -o json, jsonl or
csv, stdout gets it as data too. SIGINT or SIGTERM stops it cleanly (Ctrl-C exits 130, as
everywhere; SIGTERM 0).`,
		Example: `  fieldwork dev
  fieldwork dev --port 19092 --dsn sqlite:/tmp/fw.db --seed 7
  fieldwork dev --no-seed --partitions 6
  fieldwork dev --fresh`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(f.Settings().Conn.Brokers) > 0 {
				return fwerr.Usagef("--brokers does not apply to fieldwork dev: it serves its own broker (choose its port with --port)")
			}
			if opts.Partitions < 1 || opts.Partitions > 1000 {
				return fwerr.Usagef("--partitions %d: must be between 1 and 1000", opts.Partitions)
			}
			dsn, err := devDSN(f.Settings().Conn.DSN)
			if err != nil {
				return err
			}
			opts.DSN, opts.Format = dsn, f.Settings().OutputFormat
			return cmdutil.Run(cmd, opts, runF, devRun)
		},
	}
	fl := cmd.Flags()
	cmdutil.PortVar(fl, &opts.Port, devstack.DefaultPort)
	fl.IntVar(&opts.Partitions, "partitions", devstack.DefaultPartitions, "partitions of tasks, tasks.dlq and tasks.avro")
	fl.Uint64Var(&opts.Seed, "seed", 1, "seed of the sample events")
	fl.BoolVar(&opts.NoSeed, "no-seed", false, "create the topics empty")
	fl.BoolVar(&opts.DeadLetters, "dead-letters", false, "seed tasks.dlq with a dead letter per poison record, as if a consumer had run")
	fl.BoolVar(&opts.NoConsume, "no-consume", false, "do not run the buggy projection 1.4 over tasks (tasks.dlq stays empty)")
	fl.BoolVar(&opts.Fresh, "fresh", false, "start over: delete the store file (markers, journaled runs) before starting")
	return cmd
}

// devDSN checks the --dsn value (default DefaultDevDSN) and makes a relative SQLite path
// absolute, so the commands printed to try work from any directory.
func devDSN(dsn string) (string, error) {
	if dsn == "" {
		dsn = DefaultDevDSN
	}
	lower := strings.ToLower(dsn)
	var path string
	switch {
	case strings.HasPrefix(lower, "sqlite://"):
		path = dsn[len("sqlite://"):]
	case strings.HasPrefix(lower, "sqlite:"):
		path = dsn[len("sqlite:"):]
	default:
		return "", fwerr.Usagef("--dsn: fieldwork dev creates an embedded SQLite store; want sqlite:PATH")
	}
	path, query, hasQuery := strings.Cut(path, "?")
	if path == "" {
		return "", fwerr.Usagef("--dsn: sqlite: needs a file path, as in %s", DefaultDevDSN)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fwerr.Usagef("--dsn: %v", err)
	}
	if hasQuery {
		abs += "?" + query
	}
	return "sqlite:" + abs, nil
}

// devInfo is what `fieldwork dev` prints as data (-o json, jsonl, csv).
type devInfo struct {
	Brokers string `json:"brokers"`
	DSN     string `json:"dsn"`
	// SchemaRegistry serves the schema of tasks.avro.
	SchemaRegistry string                  `json:"schema_registry"`
	Seed           uint64                  `json:"seed"`
	Seeded         []devstack.TopicSeed    `json:"seeded"`
	Poison         []devstack.PoisonRecord `json:"poison"`
	// ShareGroup is what the share group task-workers did over tasks (nil without a seed).
	ShareGroup *devstack.ShareSeed `json:"share_group"`
	// Consumed is the buggy release's run over tasks (nil when it did not run).
	Consumed *demo.ConsumeRun `json:"consumed"`
	Try      []string         `json:"try"`
}

func devRun(ctx context.Context, opts *DevOptions) error {
	stack, err := devstack.Start(ctx, devstack.Options{
		Port: opts.Port, Partitions: opts.Partitions, DSN: opts.DSN, Seed: opts.Seed, NoSeed: opts.NoSeed,
		NoDeadLetters: !opts.DeadLetters, Fresh: opts.Fresh,
	})
	if err != nil {
		if errors.Is(err, devstack.ErrPortInUse) {
			return fmt.Errorf("%w; choose another port with --port", err)
		}
		return err
	}
	defer stack.Close()
	if e := stack.Earlier; !e.Empty() {
		cmdutil.Warn(opts.Streams, fmt.Sprintf("the store %s already holds %s of %s and %s from an earlier session: "+
			"counts and statuses will not match a new sandbox's; run fieldwork dev --fresh to start over",
			redact.DSN(stack.DSN), wording.Plural(e.Markers, "marker"), wording.Plural(int64(e.Consumers), "consumer"),
			wording.Plural(int64(e.Runs), "journaled replay run")))
	}

	info := devInfo{Brokers: stack.Addr, DSN: stack.DSN, SchemaRegistry: stack.SchemaRegistry, Seed: opts.Seed, Seeded: []devstack.TopicSeed{}, Poison: []devstack.PoisonRecord{}}
	if stack.Seeded != nil {
		info.Seeded, info.Poison, info.ShareGroup = stack.Seeded.Topics, stack.Seeded.Poison, stack.Seeded.Share
		if !opts.NoConsume && !opts.DeadLetters {
			run, err := demo.ConsumeBuggy(ctx, stack)
			if err != nil {
				return fmt.Errorf("the sandbox's consumer (projection %s): %w", demo.BuggyRelease, err)
			}
			info.Consumed = &run
		}
	}
	info.Try = devTry(stack, info.Consumed != nil)

	s := opts.Streams
	banner, bannerTTY, width := s.ErrOut, s.ErrTTY, s.ErrWidth
	switch format, _ := output.ParseFormat(opts.Format, s.OutTTY); {
	case opts.Format != "" && format != output.FormatTable:
		p := output.NewPrinter(s, format)
		if err := p.Object(info, devSections(info)); err != nil {
			return err
		}
	case s.OutTTY:
		banner, bannerTTY, width = s.Out, true, s.Width
	}
	if err := printDevBanner(banner, bannerTTY && !s.NoColor, width, info, stack); err != nil {
		return err
	}

	return cmdutil.WaitAndClose(ctx, s, "dev", stack.Close)
}

// devTry lists commands worth trying against the stack, using what was seeded; consumed: the
// buggy release ran, so the tour goes on with the replay and the fix.
func devTry(stack *devstack.Stack, consumed bool) []string {
	b := " --brokers " + stack.Addr
	try := []string{
		"fieldwork inspect topic tasks" + b,
		"fieldwork inspect validate tasks" + b,
	}
	if sd := stack.Seeded; sd != nil {
		if len(sd.Manifest.Stale) > 0 {
			try = append(try, "fieldwork inspect aggregate tasks "+sd.Manifest.Stale[0].AggregateID+b)
		}
		if len(sd.Poison) > 0 {
			p := sd.Poison[0]
			try = append(try, "fieldwork inspect record "+poisonAddress(p).String()+b)
		}
		try = append(try, "fieldwork inspect record "+devstack.TopicAvro+"/0/0 --schema-registry "+stack.SchemaRegistry+b)
		if sd.Share != nil {
			try = append(try, "fieldwork groups describe "+devstack.ShareGroup+" --interval 0"+b, "fieldwork groups check "+devstack.ShareGroup+b)
		}
	}
	d := " --dsn " + stack.DSN
	if consumed {
		replay := "fieldwork replay --topic tasks.dlq --dlq-reason rejected"
		return append(try,
			"fieldwork dlq list --consumer task-projection"+b+d,
			replay+b+d,
			replay+" --execute --yes --reason "+shellQuote(fixReason)+b+d,
			"fieldwork consume --topic tasks --group task-projection --handler projection --stop-when-idle 3s"+b+d,
			"fieldwork dlq list --consumer task-projection --status resolved"+b+d,
			"fieldwork processed stats"+d,
			"kcat -b "+stack.Addr+" -C -t tasks -e -J",
		)
	}
	return append(try,
		"fieldwork consume --topic tasks --group task-projection --handler projection --migrate --stop-when-idle 3s"+b+d,
		"fieldwork dlq list --consumer task-projection"+b+d,
		"fieldwork replay --topic tasks.dlq"+b+d,
		"fieldwork processed stats"+d,
		"kcat -b "+stack.Addr+" -C -t tasks -e -J",
	)
}

// fixReason is the --reason of the tour's replay: the fix is deployed.
const fixReason = "projection " + demo.FixedRelease + " deployed"

// poisonAddress is where a seeded poison record is.
func poisonAddress(p devstack.PoisonRecord) kafka.RecordAddress {
	return kafka.RecordAddress{Topic: p.Topic, Partition: p.Partition, Offset: p.Offset}
}

func devSections(info devInfo) []output.Section {
	sections := []output.Section{{Fields: [][2]string{{"brokers", info.Brokers}, {"dsn", info.DSN}, {"seed", strconv.FormatUint(info.Seed, 10)}}}}
	header, rows := seededTable(info.Seeded)
	return append(sections, output.Section{Title: "Seeded", Header: header, Rows: rows})
}

func seededTable(ts []devstack.TopicSeed) ([]string, [][]string) {
	header := []string{"topic", "partitions", "records", "per_partition", "events", "duplicates", "stale", "poison", "dead_letters"}
	var rows [][]string
	for _, t := range ts {
		per := make([]string, len(t.PerPartition))
		for i, n := range t.PerPartition {
			per[i] = strconv.Itoa(n)
		}
		rows = append(rows, []string{t.Topic, strconv.Itoa(t.Partitions), strconv.Itoa(t.Records), strings.Join(per, "/"),
			strconv.Itoa(t.Events), strconv.Itoa(t.Duplicates), strconv.Itoa(t.Stale), strconv.Itoa(t.Poison), strconv.Itoa(t.DeadLetters)})
	}
	return header, rows
}

// printDevBanner writes what is served, what was seeded and what to try, for a person: its
// tables fitted to width and its sentences wrapped to it (0: not a terminal, nothing cut).
func printDevBanner(w io.Writer, color bool, width int, info devInfo, stack *devstack.Stack) error {
	p := output.NewPrinter(&output.Streams{Out: w, ErrOut: w, OutTTY: color, Width: width}, output.FormatTable)
	st, w := p.Styles, output.WrappingTextWriter(w, color, width)
	// say writes a sentence indented by indent, wrapped to the terminal under itself.
	say := func(indent, s string) {
		for _, line := range output.Wrap(s, max(width-len(indent), 0)) {
			fmt.Fprintln(w, indent+line)
		}
	}
	fmt.Fprintln(w, st.Title.Render("fieldwork dev")+": an in-process Kafka broker (kfake) and an SQLite store")
	fmt.Fprintln(w)
	served := [][2]string{{"brokers", info.Brokers}, {"dsn", info.DSN}, {"schema registry", info.SchemaRegistry}}
	for _, f := range served {
		fmt.Fprintf(w, "  %s  %s\n", st.Header.Render(fmt.Sprintf("%-15s", f[0])), f[1])
	}
	for _, line := range output.Wrap("(in memory: the schema of "+devstack.TopicAvro+", the stream of tasks in Avro)", max(width-19, 0)) {
		fmt.Fprintln(w, strings.Repeat(" ", 19)+st.Dim.Render(line))
	}
	fmt.Fprintln(w)
	if stack.Seeded == nil {
		fmt.Fprintf(w, "Topics tasks, tasks.dlq and tasks.avro created empty (%d partitions each).\n\n", stack.Partitions)
	} else {
		fmt.Fprintf(w, "%s (seed %d):\n", st.Title.Render("Seeded"), info.Seed)
		header, rows := seededTable(info.Seeded)
		// On a narrow terminal the counts stay; the partitions are details.
		if err := p.Object(nil, []output.Section{{Header: header, Rows: rows, WideOnly: []string{"partitions", "per_partition"}}}); err != nil {
			return err
		}
		fmt.Fprintln(w)
		if len(info.Poison) > 0 {
			fmt.Fprintln(w, st.Title.Render("Poison records")+":")
			addrs, addrWidth := make([]string, len(info.Poison)), 0
			for i, pr := range info.Poison {
				addrs[i] = poisonAddress(pr).String()
				addrWidth = max(addrWidth, len(addrs[i]))
			}
			for i, pr := range info.Poison {
				head := fmt.Sprintf("  %-*s  key %s  ", addrWidth, addrs[i], pr.Key)
				for j, line := range output.Wrap(fmt.Sprintf("%s: %s", pr.Kind, pr.Reason), max(width-len(head), 0)) {
					if j > 0 {
						head = strings.Repeat(" ", len(head))
					}
					fmt.Fprintln(w, head+line)
				}
			}
			fmt.Fprintln(w)
		}
	}
	if sh := info.ShareGroup; sh != nil {
		fmt.Fprintf(w, "%s %s read %s:\n", st.Title.Render("Share group"), sh.Group, sh.Topic)
		say("  ", fmt.Sprintf("%d accepted, %d poison rejected. kfake archives a rejected record and writes no dead letter (nor takes the "+
			"group's errors.deadletterqueue.* configs), so the sandbox wrote the %d dead letters a 4.4 broker would into %s "+
			"(errors.deadletterqueue.group.enable=true): the __dlq.errors.* headers, coordinates only.", sh.Accepted, sh.Rejected, sh.DeadLetters, sh.DLQTopic))
		fmt.Fprintln(w)
	}
	if c := info.Consumed; c != nil {
		fmt.Fprintf(w, "%s by projection %s as group task-projection:\n", st.Title.Render("Consumed"), c.Release)
		say("  ", fmt.Sprintf("a release with a bug: it rejects %s for good. %d records: %d applied, %d duplicates, %d stale, "+
			"%d dead-lettered to tasks.dlq (%d malformed, %d rejected).", c.Rejects, c.Records, c.Applied, c.Duplicates, c.Stale,
			c.DeadLettered, c.DeadLetteredByReason[dlq.ReasonMalformed], c.DeadLetteredByReason[dlq.ReasonRejected]))
		say("  ", fmt.Sprintf("The fix is --handler projection (release %s): replay the rejected dead letters, consume, "+
			"and they are settled: resolved, or stale where the task already had a newer version.", demo.FixedRelease))
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, st.Title.Render("Try")+", in another terminal:")
	for _, c := range info.Try {
		fmt.Fprintln(w, "  "+c)
	}
	fmt.Fprintf(w, "  export FIELDWORK_BROKERS=%s FIELDWORK_DSN=%s FIELDWORK_SCHEMA_REGISTRY=%s\n", info.Brokers, shellQuote(info.DSN), info.SchemaRegistry)
	fmt.Fprintln(w)
	for _, line := range output.Wrap("The broker keeps its data in memory: stopping it forgets the topics; the store file stays.", width) {
		fmt.Fprintln(w, st.Dim.Render(line))
	}
	fmt.Fprintln(w, "Serving; press Ctrl-C to stop.")
	return nil
}

// shellQuote quotes s for a POSIX shell when it holds anything but safe characters.
func shellQuote(s string) string {
	if strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-:=+,@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
