// Command taskboard is a team's service built on fieldwork's public packages: it consumes the
// task events of a Kafka topic (fieldwork's sample stream, as `fieldwork dev` serves it) and
// keeps its own tables in the same database as its inbox markers (see Board): a task board at
// each task's highest version (consumer.VersionGuard) and a notification of each change
// keyed by consumer.IdempotencyKey. Events it cannot handle are dead-lettered by the runner
// in fieldwork's convention, so that `fieldwork dlq list` and `fieldwork replay` work on
// them.
//
// Every flag has an environment variable, TASKBOARD_<FLAG> (upper case, - as _); a flag
// given wins. The defaults are `fieldwork dev`'s broker and the store file it creates in the
// directory it was started from: see README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/consumer"
	"github.com/fieldwork/fieldwork/inbox"
)

func main() {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr, sigs, stop)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.As(err, new(usageError)):
		fmt.Fprintln(os.Stderr, "taskboard:", err)
		os.Exit(2)
	case errors.Is(err, consumer.ErrAborted): // a second signal abandoned the batches in flight
		fmt.Fprintln(os.Stderr, "taskboard:", err)
		os.Exit(130)
	default:
		fmt.Fprintln(os.Stderr, "taskboard:", err)
		os.Exit(1)
	}
}

// Defaults: fieldwork dev's broker and store (its --port and --dsn defaults).
const (
	defaultBrokers = "127.0.0.1:9092"
	defaultDSN     = "sqlite:fieldwork-dev.db"
)

// config is what the flags and the environment say.
type config struct {
	brokers      []string
	dsn          string
	schema       string
	topics       []string
	group        string
	dlqTopic     string
	instanceID   string
	notifyURL    string
	notifyWait   time.Duration
	migrate      bool
	stopWhenIdle time.Duration
	maxAttempts  int
}

type usageError struct{ error }

// listValue is a comma-separated flag that may also be repeated.
type listValue struct {
	list *[]string
	set  bool
}

func (l *listValue) String() string {
	if l.list == nil {
		return ""
	}
	return strings.Join(*l.list, ",")
}

func (l *listValue) Set(s string) error {
	if !l.set {
		*l.list, l.set = nil, true
	}
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			*l.list = append(*l.list, f)
		}
	}
	return nil
}

// parse reads args over the environment's TASKBOARD_* variables.
func parse(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	c := config{notifyWait: 10 * time.Second, migrate: true, maxAttempts: 5}
	fs := flag.NewFlagSet("taskboard", flag.ContinueOnError)
	fs.SetOutput(stderr)
	brokers, topics := &listValue{list: &c.brokers}, &listValue{list: &c.topics}
	fs.Var(brokers, "brokers", "Kafka seed brokers, comma-separated (default "+defaultBrokers+", fieldwork dev's)")
	fs.StringVar(&c.dsn, "dsn", defaultDSN, "the database of the markers and the service's tables: postgres://… or sqlite:PATH")
	fs.StringVar(&c.schema, "schema", "", "schema of the markers and the tables (default fieldwork; on SQLite a table-name prefix)")
	fs.Var(topics, "topic", "source topics, comma-separated or repeated (default tasks)")
	fs.StringVar(&c.group, "group", "taskboard", "Kafka consumer group, also the consumer name of the markers")
	fs.StringVar(&c.dlqTopic, "dlq-topic", "", "dead-letter topic (default <topic>.dlq)")
	fs.StringVar(&c.instanceID, "instance-id", "", "static group membership id: a restart with the same id keeps its partitions")
	fs.StringVar(&c.notifyURL, "notify-url", "", "POST each notification here with its Idempotency-Key (default: leave them in the outbox table)")
	fs.DurationVar(&c.notifyWait, "notify-timeout", c.notifyWait, "bound of one notification POST")
	fs.BoolVar(&c.migrate, "migrate", c.migrate, "create or update the inbox's and the service's tables at start (false: only check them)")
	fs.DurationVar(&c.stopWhenIdle, "stop-when-idle", 0, "exit 0 once nothing arrived for this long and the group is committed to the end (0: run until interrupted)")
	fs.IntVar(&c.maxAttempts, "max-attempts", c.maxAttempts, "attempts of a retryable failure before the event is dead-lettered as exhausted")
	c.brokers, c.topics = []string{defaultBrokers}, []string{"tasks"}

	// The environment first, as if its values were flags given before the command line's.
	var fromEnv []string
	fs.VisitAll(func(f *flag.Flag) {
		if v, ok := lookupEnv(getenv, f.Name); ok {
			fromEnv = append(fromEnv, "-"+f.Name+"="+v)
		}
	})
	if err := fs.Parse(fromEnv); err != nil {
		return c, usageError{fmt.Errorf("environment: %w", err)}
	}
	brokers.set, topics.set = false, false // a list on the command line replaces the environment's
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return c, err
		}
		return c, usageError{err}
	}
	if fs.NArg() > 0 {
		return c, usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	switch {
	case len(c.brokers) == 0:
		return c, usageError{errors.New("--brokers: no broker given")}
	case len(c.topics) == 0:
		return c, usageError{errors.New("--topic: no topic given")}
	case c.maxAttempts < 1:
		return c, usageError{fmt.Errorf("--max-attempts %d: want 1 or more", c.maxAttempts)}
	}
	return c, nil
}

// lookupEnv is the value of the flag's TASKBOARD_ variable, when it is set and not empty.
func lookupEnv(getenv func(string) string, flagName string) (string, bool) {
	v := getenv("TASKBOARD_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_")))
	return v, v != ""
}

// run is the service: parse, open the store, migrate (or check), run the consumer until ctx
// is done, it is idle (--stop-when-idle) or it fails, then print what it did on stdout. The
// first signal on sigs cancels (stop): the runner drains, commits what it finished and
// returns; a second abandons the batches in flight (Runner.Abort).
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer,
	sigs <-chan os.Signal, stop context.CancelFunc) error {
	c, err := parse(args, getenv, stderr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))

	var opts []inbox.Option
	if c.schema != "" {
		opts = append(opts, inbox.Schema(c.schema))
	}
	st, err := inbox.Open(ctx, c.dsn, opts...)
	if err != nil {
		return err
	}
	defer st.Close()
	board, err := NewBoard(st, c.group, c.notifyURL, c.notifyWait)
	if err != nil {
		return usageError{err}
	}
	if c.migrate {
		err = consumer.Migrate(ctx, st, board)
	} else {
		err = consumer.Check(ctx, st, board)
	}
	if err != nil {
		return err
	}

	ropts := []consumer.Opt{
		consumer.Topics(c.topics...),
		consumer.Group(c.group),
		consumer.Kafka(kgo.SeedBrokers(c.brokers...)),
		consumer.VersionGuard(), // a stale event is marked stale in the claim and never handled
		consumer.MaxAttempts(c.maxAttempts),
		consumer.Logger(log),
	}
	if c.dlqTopic != "" {
		ropts = append(ropts, consumer.DeadLetterTopic(c.dlqTopic))
	}
	if c.instanceID != "" {
		ropts = append(ropts, consumer.InstanceID(c.instanceID))
	}
	if c.stopWhenIdle > 0 {
		ropts = append(ropts, consumer.StopWhenIdle(c.stopWhenIdle))
	}
	r, err := consumer.New(st, board, ropts...)
	if err != nil {
		return usageError{err}
	}
	go func() {
		n := 0
		for {
			select {
			case <-r.Done():
				return
			case <-sigs:
				if n++; n == 1 {
					log.Info("interrupted: draining (interrupt again to abandon the batches in flight)")
					stop()
				} else {
					r.Abort()
				}
			}
		}
	}()
	runErr := r.Run(ctx)
	s := r.Stats()
	fmt.Fprintf(stdout, "taskboard: %s: %d applied, %s, %d stale, %d dead-lettered\n",
		plural(s.Records, "record"), s.Processed, plural(s.Duplicates, "duplicate"), s.Stale, s.DeadLettered)
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return runErr
	}
	sum, err := board.Summary(context.WithoutCancel(ctx), st)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, sum)
	return nil
}

// plural is "1 record", "2 records".
func plural(n int64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.FormatInt(n, 10) + " " + word + "s"
}
