package cmd

import (
	"context"
	"encoding/base64"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/output"
)

func init() { register(NewCmdDLQ) }

// NewCmdDLQ is the dlq group: list, show and summarise dead-letter topics of every convention.
func NewCmdDLQ(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dlq <command>",
		Short: "List, show and summarise dead-letter topics",
		Long: `Read dead-letter topics of every convention an operator meets (fieldwork's fw.dlq.*
headers, Spring Kafka, Kafka Connect, Watermill, SmallRye) as one view: where the record
failed (original topic, partition, offset), why (reason, error class, message), and which
consumer gave up on it.

  dlq list                      dead letters, filtered; status with a store
  dlq show T/P/O                one dead letter: metadata, headers, event, value, replay command
  dlq stats                     per topic and per (original topic, reason, error class)

Without --topic or --pattern the commands read every topic whose name ends in .dlq, -dlt or
.DLT. Scans read the offsets fixed when they start and never wait for new records.

With a dedup store (--dsn, FIELDWORK_DSN or the context's dsn) each dead letter has a status
for --consumer (default: the consumer group the dead letter names):
  pending    the consumer has no marker for the event: it still needs work
  replayed   a journaled replay sent it back and there is no marker yet
  resolved   the consumer has a marker for the event: it was processed since
  unknown    no event id (or no consumer) to look up
--no-status skips the store.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	addStoreFlags(cmd.PersistentFlags(), &f.Dedup)
	cmd.AddCommand(
		NewCmdDLQList(f, nil),
		NewCmdDLQShow(f, nil),
		NewCmdDLQStats(f, nil),
	)
	return cmd
}

// dlqDeps are what the dlq commands need from the factory, built lazily so that parsing,
// --help and usage errors never dial a broker or open a database.
type dlqDeps struct {
	Streams *output.Streams
	Kafka   func(context.Context) (*kafka.Cluster, error)
	Printer func() (*output.Printer, error)
	Store   func(context.Context) (*dedup.Store, error)
	// StoreConfigured reports whether a DSN is configured (flag, environment or context).
	StoreConfigured func() (bool, error)
	// Names points at the factory's --schema/--table/--column-* values, for messages.
	Names *dedup.Options
	Now   func() time.Time
}

func newDLQDeps(f *Factory) dlqDeps {
	return dlqDeps{
		Streams: f.Streams, Kafka: f.Kafka, Printer: f.Printer, Store: f.Store, Names: &f.Dedup, Now: time.Now,
		StoreConfigured: func() (bool, error) {
			conn, err := f.Connection()
			if err != nil {
				return false, err
			}
			return conn.DSN != "", nil
		},
	}
}

func (d dlqDeps) names() dedup.Options {
	if d.Names == nil {
		return dedup.Options{}
	}
	return *d.Names
}

// dlqTopicFlags choose the dead-letter topics to read.
type dlqTopicFlags struct {
	Topics  []string
	Pattern string
}

func (t *dlqTopicFlags) register(fs *pflag.FlagSet) {
	fs.StringArrayVar(&t.Topics, "topic", nil, "dead-letter topic to read (repeatable; default: every topic ending in .dlq, -dlt or .DLT)")
	fs.StringVar(&t.Pattern, "pattern", "", "read every topic whose name matches this regular expression (default "+dlq.DefaultTopicPattern.String()+")")
}

// compile validates the flags: --topic and --pattern do not mix, and the pattern compiles.
func (t *dlqTopicFlags) compile() (*regexp.Regexp, error) {
	for _, name := range t.Topics {
		if strings.TrimSpace(name) == "" {
			return nil, fwerr.Usagef("--topic: a topic name cannot be empty")
		}
	}
	if t.Pattern == "" {
		return nil, nil
	}
	if len(t.Topics) > 0 {
		return nil, fwerr.Usagef("choose either --topic or --pattern, not both")
	}
	re, err := regexp.Compile(t.Pattern)
	if err != nil {
		return nil, fwerr.Usagef("--pattern %q is not a regular expression: %v", t.Pattern, err)
	}
	return re, nil
}

// resolve finds the topics, saying on stderr when a pattern matched none ("no dead letters:
// no topic matches …", whatever the format: nothing is read then).
func (t *dlqTopicFlags) resolve(ctx context.Context, c *kafka.Cluster, pattern *regexp.Regexp, s *output.Streams) ([]string, error) {
	topics, err := dlq.Topics(ctx, c, t.Topics, pattern)
	if err != nil {
		return nil, err
	}
	if len(topics) == 0 {
		if pattern == nil {
			pattern = dlq.DefaultTopicPattern
		}
		fmt.Fprintf(s.ErrOut, "no dead letters: no topic matches %s\n", pattern)
	}
	return topics, nil
}

// dlqFilterFlags are the flags that select dead letters.
type dlqFilterFlags struct {
	Since, Until  string
	Reasons       []string
	Error         string
	OriginalTopic string
	Group         string
	Key           string
	KeyBase64     string
	EventID       string
}

func (fl *dlqFilterFlags) register(fs *pflag.FlagSet, eventID bool) {
	fs.StringVar(&fl.Since, "since", "", "dead letters written from this time: RFC 3339 or a duration ago (2h, 30m)")
	fs.StringVar(&fl.Until, "until", "", "dead letters written before this time: RFC 3339 or a duration ago")
	fs.StringSliceVar(&fl.Reasons, "reason", nil, "reason: "+strings.Join(dlq.Reasons, ", ")+" or unknown (repeatable, comma-separated)")
	fs.StringVar(&fl.Error, "error", "", "regular expression the error message or error class must match")
	fs.StringVar(&fl.OriginalTopic, "original-topic", "", "only dead letters of records from this topic")
	fs.StringVar(&fl.Group, "group", "", "only dead letters from this consumer group")
	fs.StringVar(&fl.Key, "key", "", "only dead letters with this record key")
	fs.StringVar(&fl.KeyBase64, "key-base64", "", "only dead letters with this record key, base64 (for keys that are not text)")
	if eventID {
		fs.StringVar(&fl.EventID, "event-id", "", "only dead letters of this event id")
	}
}

// filter validates the flags and builds the filter and the time window of the scan; now
// anchors durations.
func (fl *dlqFilterFlags) filter(cmd *cobra.Command, now time.Time) (dlq.Filter, error) {
	var f dlq.Filter
	var err error
	if f.Since, err = parseWhen("--since", fl.Since, now); err != nil {
		return f, err
	}
	if f.Until, err = parseWhen("--until", fl.Until, now); err != nil {
		return f, err
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Until.After(f.Since) {
		return f, fwerr.Usagef("--until %s is not after --since %s", f.Until.Format(time.RFC3339), f.Since.Format(time.RFC3339))
	}
	for _, r := range fl.Reasons {
		r = strings.TrimSpace(r)
		if r == "" {
			continue
		}
		if !slices.Contains(dlq.Reasons, r) && r != dlq.ReasonUnknown {
			return f, fwerr.Usagef("--reason %q: want %s or %s", r, strings.Join(dlq.Reasons, ", "), dlq.ReasonUnknown)
		}
		f.Reasons = append(f.Reasons, r)
	}
	if fl.Error != "" {
		if f.ErrorRegexp, err = regexp.Compile(fl.Error); err != nil {
			return f, fwerr.Usagef("--error %q is not a regular expression: %v", fl.Error, err)
		}
	}
	f.OriginalTopic, f.Group, f.EventID = fl.OriginalTopic, fl.Group, fl.EventID
	keySet, key64Set := cmd.Flags().Changed("key"), cmd.Flags().Changed("key-base64")
	switch {
	case keySet && key64Set:
		return f, fwerr.Usagef("choose either --key or --key-base64, not both")
	case keySet:
		f.Key = []byte(fl.Key)
	case key64Set:
		k, err := base64.StdEncoding.DecodeString(fl.KeyBase64)
		if err != nil {
			return f, fwerr.Usagef("--key-base64: %v", err)
		}
		f.Key = k
		if f.Key == nil {
			f.Key = []byte{}
		}
	}
	return f, nil
}

// dlqStatusFlags say how statuses are looked up.
type dlqStatusFlags struct {
	Consumer string
	NoStatus bool
}

func (s *dlqStatusFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&s.Consumer, "consumer", "", "consumer whose markers tell the status (default: the group each dead letter names)")
	fs.BoolVar(&s.NoStatus, "no-status", false, "do not look statuses up, even with a store configured")
}

// validate checks the flags before anything connects: --consumer must be a usable name, and
// --consumer and a status filter need a store (configured by --dsn, the environment or the
// context) and contradict --no-status.
func (s *dlqStatusFlags) validate(cmd *cobra.Command, d dlqDeps, statusFilter bool) error {
	consumerSet := cmd.Flags().Changed("consumer")
	if consumerSet {
		if err := checkConsumer(s.Consumer); err != nil {
			return err
		}
	}
	if !consumerSet && !statusFilter {
		return nil
	}
	what := "--consumer"
	if statusFilter {
		what = "--status"
	}
	if s.NoStatus {
		return fwerr.Usagef("%s is about the status, which --no-status turns off", what)
	}
	configured, err := d.StoreConfigured()
	if err != nil {
		return err
	}
	if !configured {
		return fwerr.Usagef("%s needs the dedup store: pass --dsn (postgres://… or sqlite:PATH) or set FIELDWORK_DSN", what)
	}
	return nil
}

// open connects to the store when statuses are wanted: a store is configured and
// --no-status is not given. The returned close function is never nil.
func (s *dlqStatusFlags) open(ctx context.Context, d dlqDeps) (dlq.StatusLookup, func(), error) {
	none := func() {}
	if s.NoStatus {
		return dlq.StatusLookup{}, none, nil
	}
	configured, err := d.StoreConfigured()
	if err != nil || !configured {
		return dlq.StatusLookup{}, none, err
	}
	st, err := d.Store(ctx)
	if err != nil {
		if fwerr.KindOf(err) == fwerr.KindConnect {
			err = fwerr.Connect(fmt.Errorf("%w\nhint: --no-status reads the dead letters without the store", err))
		}
		return dlq.StatusLookup{}, none, err
	}
	var once sync.Once
	noJournal := func(error) {
		once.Do(func() {
			fmt.Fprintln(d.Streams.ErrOut, "warning: the store has no replay journal (`fieldwork db migrate` creates it): dead letters a replay sent show as pending")
		})
	}
	return dlq.StatusLookup{Store: st, Consumer: s.Consumer, NoJournal: noJournal}, func() { _ = st.Close() }, nil
}

// dlqScanProgress wraps scanProgress with a label that names the topics.
func dlqScanProgress(s *output.Streams, verb string, topics []string) (func(done, total int64), func()) {
	label := verb + " " + strings.Join(topics, ", ")
	if len(topics) > 3 {
		label = fmt.Sprintf("%s %d dead-letter topics", verb, len(topics))
	}
	fn, done := scanProgress(s, label)
	if fn == nil {
		return nil, done
	}
	return fn, done
}

// dlqCoordinate writes a position as T/P/O.
func dlqCoordinate(topic string, partition int32, offset int64) string {
	return fmt.Sprintf("%s/%d/%d", topic, partition, offset)
}

// dlqOriginal writes a dead letter's original position, "?" for what is not known.
func dlqOriginal(d dlq.DeadLetter) string {
	if d.OriginalTopic == "" && d.OriginalPartition == nil && d.OriginalOffset == nil {
		return "-"
	}
	topic, part, off := d.OriginalTopic, "?", "?"
	if topic == "" {
		topic = "?"
	}
	if d.OriginalPartition != nil {
		part = fmt.Sprint(*d.OriginalPartition)
	}
	if d.OriginalOffset != nil {
		off = fmt.Sprint(*d.OriginalOffset)
	}
	return topic + "/" + part + "/" + off
}

// dlqOneLine folds whitespace (newlines of a message or stack trace) into single spaces, for
// a table cell.
func dlqOneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// dlqTruncate cuts s to n runes with an ellipsis.
func dlqTruncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// dlqText shows bytes as text when they are printable UTF-8, else as base64 with ok false.
func dlqText(b []byte) (string, bool) {
	if utf8.Valid(b) {
		for _, c := range b {
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
				return base64.StdEncoding.EncodeToString(b), false
			}
		}
		return string(b), true
	}
	return base64.StdEncoding.EncodeToString(b), false
}

// dlqStoreError gives a store error from a status lookup its exit code and hint.
func dlqStoreError(err error, d dlqDeps) error { return storeError(err, d.names()) }
