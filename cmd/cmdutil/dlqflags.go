package cmdutil

import (
	"context"
	"encoding/base64"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/look/status"
	"github.com/fieldwork/fieldwork/internal/output"
)

// DLQStoreDeps are what the status lookup needs to open the store, lazily.
type DLQStoreDeps struct {
	Streams *output.Streams
	Store   func(context.Context) (*dedup.Store, error)
	// StoreConfigured reports whether a DSN is configured (flag, environment or context).
	StoreConfigured func() (bool, error)
}

// DLQTopicFlags choose the dead-letter topics to read.
type DLQTopicFlags struct {
	Topics  []string
	Pattern string
}

// Register adds --topic and --pattern.
func (t *DLQTopicFlags) Register(fs *pflag.FlagSet) {
	TopicsVar(fs, &t.Topics, "topic", "dead-letter `topic` to read (repeatable; default: every topic --pattern matches)", false)
	fs.StringVar(&t.Pattern, "pattern", "", "read every topic whose name matches this regular expression (default: FIELDWORK_DLQ_PATTERN, the context's dlq_pattern, else "+dlq.DefaultTopicPattern.String()+")")
}

// Compile validates the flags: --topic and --pattern do not mix, and the pattern compiles.
func (t *DLQTopicFlags) Compile() (*regexp.Regexp, error) {
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

// DLQPattern is the pattern configured for finding dead-letter topics, and where it was
// configured: the environment or the context (config.Connection.DLQPattern); "" for none.
type DLQPattern func() (pattern, from string, err error)

// DLQPattern is the dead-letter topic pattern of the resolved connection.
func (f *Factory) DLQPattern() (pattern, from string, err error) {
	conn, err := f.Connection()
	return conn.DLQPattern, conn.DLQPatternFrom, err
}

// Resolve finds the topics. Without --topic it reads the topics the pattern matches: --pattern
// (pattern), else the configured one, else dlq.DefaultTopicPattern, and says on stderr which
// pattern it used, from where, and how many topics matched — when none, with a hint that ACLs
// may hide topics, whatever the format: nothing is read then. found is that pattern, nil
// with --topic (for a follow that also reads the topics it matches later).
func (t *DLQTopicFlags) Resolve(ctx context.Context, c *kafka.Cluster, pattern *regexp.Regexp, configured DLQPattern, s *output.Streams) (topics []string, found *regexp.Regexp, err error) {
	pattern, from, err := t.Effective(pattern, configured)
	if err != nil {
		return nil, nil, err
	}
	found0, err := dlq.Discover(ctx, c, t.Topics, pattern)
	if err != nil {
		return nil, nil, err
	}
	topics = found0.Topics
	if len(t.Topics) > 0 {
		return topics, nil, nil
	}
	if pattern == nil {
		pattern = dlq.DefaultTopicPattern
	}
	if len(topics) == 0 {
		// The cluster lists only the topics the principal may DESCRIBE: say so, since an
		// empty answer may be the ACLs' and not the cluster's.
		fmt.Fprintf(s.ErrText(), "no dead letters: no topic matches %s\n", patternName(pattern, from))
		fmt.Fprintln(s.ErrText(), "hint: the cluster lists only the topics you may DESCRIBE: its ACLs may hide dead-letter topics (name one with --topic to see why)")
		return topics, pattern, nil
	}
	fmt.Fprintln(s.ErrText(), discoveryLine(found0, patternName(pattern, from)))
	return topics, pattern, nil
}

// discoveryLine says what discovery found and why: how many topics the pattern matched and,
// when the share groups' dead-letter topics were added (dlq.Discover), how many and by what
// (the cluster's prefix, the enable flag), then the topics. With share-group topics added
// the list is cut to fit 80 columns (the rest counted), so that the line stays one line.
func discoveryLine(d dlq.Discovery, pattern string) string {
	noun := "topics match"
	if d.Matched == 1 {
		noun = "topic matches"
	}
	head := fmt.Sprintf("%d %s %s", d.Matched, noun, pattern)
	if len(d.Prefixed)+len(d.Flagged) == 0 {
		shown := d.Topics
		if len(shown) > 10 {
			shown = append(slices.Clone(shown[:10]), "…")
		}
		return head + ": " + strings.Join(shown, ", ")
	}
	var by string
	switch {
	case len(d.Flagged) == 0:
		by = "prefix " + d.Prefix
	case len(d.Prefixed) == 0:
		by = "enable flag"
	default:
		by = fmt.Sprintf("%d by prefix %s, %d by enable flag", len(d.Prefixed), d.Prefix, len(d.Flagged))
	}
	n, dlqs := len(d.Prefixed)+len(d.Flagged), "DLQs"
	if n == 1 {
		dlqs = "DLQ"
	}
	head += fmt.Sprintf(" + %d share-group %s (%s):", n, dlqs, by)
	const width = 80
	line := head
	for i, t := range d.Topics {
		sep := " "
		if i > 0 {
			sep = ", "
		}
		next := line + sep + t
		if left := len(d.Topics) - i - 1; left > 0 {
			next += fmt.Sprintf(", +%d", left)
		}
		if i > 0 && len(next) > width {
			return line + fmt.Sprintf(", +%d", len(d.Topics)-i)
		}
		line += sep + t
	}
	return line
}

// patternName is how discovery names the pattern it used: by where it comes from ("the
// default dead-letter pattern", "the pattern of context prod"), not by its regular expression,
// which is long and says little at a glance (dlq list --help and README give the default one);
// a pattern typed with --pattern is the operator's own and is shown as typed.
func patternName(pattern *regexp.Regexp, from string) string {
	switch from {
	case "default":
		return "the default dead-letter pattern"
	case "--pattern":
		return fmt.Sprintf("--pattern %s", pattern)
	}
	return "the dead-letter pattern of " + from
}

// Effective is the pattern that finds the topics without --topic, and where it comes from:
// --pattern (pattern), else the configured one, else dlq.DefaultTopicPattern ("default").
func (t *DLQTopicFlags) Effective(pattern *regexp.Regexp, configured DLQPattern) (*regexp.Regexp, string, error) {
	if len(t.Topics) > 0 || pattern != nil {
		return pattern, "--pattern", nil
	}
	if configured != nil {
		p, where, err := configured()
		if err != nil {
			return nil, "", err
		}
		if p != "" {
			re, err := regexp.Compile(p)
			if err != nil {
				return nil, "", fwerr.Usagef("the dead-letter topic pattern %q (%s) is not a regular expression: %v", p, where, err)
			}
			return re, where, nil
		}
	}
	return dlq.DefaultTopicPattern, "default", nil
}

// Discovered reports whether the topics come from a pattern rather than --topic: a scan may
// then skip one that is deleted while it runs (dlq.ScanOptions.SkipDeleted).
func (t *DLQTopicFlags) Discovered() bool { return len(t.Topics) == 0 }

// WarnDeleted says on stderr which topics a scan skipped because they were deleted after
// they were found.
func WarnDeleted(s *output.Streams, scan *dlq.Scan) {
	for _, t := range scan.Deleted() {
		fmt.Fprintf(s.ErrText(), "warning: %s was deleted while it was read: skipped\n", t)
	}
}

// DLQFilterFlags are the flags that select dead letters, one flag set for every command
// that selects them (dlq list, dlq stats, dlq show, replay): a flag name means one thing
// (docs/design.md §4). The reason filter is --dlq-reason; --reason is only ever why an action
// that changes something is taken, and an old `--reason` filter is refused with a hint
// (DLQReasonHint).
type DLQFilterFlags struct {
	window        WindowFlags
	Reasons       []string
	Error         string
	OriginalTopic string
	Group         string
	Key           string
	KeyBase64     string
	EventID       string
	SchemaID      int
	Fingerprint   string
}

// DLQFilterSet says which of the dead-letter filters a command registers.
type DLQFilterSet uint8

// The groups of dead-letter filters.
const (
	// DLQWindow is --since and --until, on the dead letter's timestamp (replay has them from
	// SelectionFlags, with the same meaning).
	DLQWindow DLQFilterSet = 1 << iota
	// DLQFields is --dlq-reason, --error, --original-topic, --group, --key, --key-base64,
	// --schema-id and --fingerprint.
	DLQFields
	// DLQEventID is --event-id.
	DLQEventID
)

// Register adds the filters of set to cmd, and the hint that turns an old --reason filter
// into a usage error naming --dlq-reason.
func (fl *DLQFilterFlags) Register(cmd *cobra.Command, set DLQFilterSet) {
	fs := cmd.Flags()
	if set&DLQWindow != 0 {
		fl.window.Register(fs, "dead letters written from this time", "dead letters written before this time")
	}
	if set&DLQFields != 0 {
		fs.StringSliceVar(&fl.Reasons, "dlq-reason", nil, "dead letters with this reason: "+strings.Join(dlq.Reasons, ", ")+" or unknown (repeatable, comma-separated)")
		fs.StringVar(&fl.Error, "error", "", "dead letters whose error message, error class or root cause matches this regular expression")
		TopicVar(fs, &fl.OriginalTopic, "original-topic", "dead letters of records from this topic")
		fs.StringVarP(&fl.Group, "group", Shorthand("group"), "", "dead letters from this consumer group")
		fs.StringVar(&fl.Key, "key", "", "dead letters with this record key")
		fs.StringVar(&fl.KeyBase64, "key-base64", "", "dead letters with this record key, base64 (for keys that are not text)")
		fs.IntVar(&fl.SchemaID, "schema-id", 0, "dead letters whose value or key names this schema registry id")
		fs.StringVar(&fl.Fingerprint, "fingerprint", "", "dead letters of this failure cause (a fingerprint of dlq stats --by fingerprint)")
	}
	if set&DLQEventID != 0 {
		fs.StringVar(&fl.EventID, "event-id", "", "dead letters of this event id")
	}
	cmd.SetFlagErrorFunc(DLQReasonHint)
}

// DLQReasonHint is the flag-error function of the commands with dead-letter filters: to a
// command with --dlq-reason an unknown --reason is the filter's old name, and the usage error
// says that it is now --dlq-reason (a subcommand that inherits the function and has no
// filters gets no hint); any other unknown flag gets the suggestions of FlagError. Every flag
// error is a usage error (exit 2), as the root command's are.
func DLQReasonHint(c *cobra.Command, err error) error {
	if c.Flags().Lookup("dlq-reason") != nil && strings.Contains(err.Error(), "unknown flag: --reason") {
		return fwerr.Wrap(fwerr.KindUsage, fmt.Errorf("%w: the dead-letter reason filter is now --dlq-reason (--reason is only the justification of an action that changes something, such as replay --execute)", err))
	}
	return fwerr.Wrap(fwerr.KindUsage, FlagError(c, err))
}

// Filter validates the flags and builds the filter and the time window of the scan; now
// anchors durations.
func (fl *DLQFilterFlags) Filter(cmd *cobra.Command, now time.Time) (dlq.Filter, error) {
	spec, err := fl.Spec(cmd)
	if err != nil {
		return dlq.Filter{}, err
	}
	f, err := spec.Compile()
	if err != nil {
		return f, err
	}
	f.Since, f.Until, err = fl.window.Window(now)
	return f, err
}

// Spec is the filter the flags write (without the window), checked by dlq.FilterSpec.Compile
// when it is used: what replay journals and resumes with.
func (fl *DLQFilterFlags) Spec(cmd *cobra.Command) (dlq.FilterSpec, error) {
	s := dlq.FilterSpec{Reasons: fl.Reasons, Error: fl.Error, OriginalTopic: fl.OriginalTopic, Group: fl.Group,
		EventID: fl.EventID, SchemaID: fl.SchemaID, Fingerprint: fl.Fingerprint}
	if cmd.Flags().Changed("schema-id") && fl.SchemaID == 0 {
		return s, fwerr.Usagef("--schema-id 0: a schema registry id is 1 or more")
	}
	keySet, key64Set := cmd.Flags().Changed("key"), cmd.Flags().Changed("key-base64")
	switch {
	case keySet && key64Set:
		return s, fwerr.Usagef("choose either --key or --key-base64, not both")
	case keySet:
		s.Key = []byte(fl.Key)
	case key64Set:
		k, err := base64.StdEncoding.DecodeString(fl.KeyBase64)
		if err != nil {
			return s, fwerr.Usagef("--key-base64: %v", err)
		}
		s.Key = k
		if s.Key == nil {
			s.Key = []byte{}
		}
	}
	return s, nil
}

// DLQStatusFlags say how statuses are looked up (--consumer, --no-status) and which are
// selected (--status): the same flags in dlq and replay.
type DLQStatusFlags struct {
	Consumer    string
	NoStatus    bool
	StatusNames []string
}

// DLQStatusSet says which of the status flags a command registers beside --consumer.
type DLQStatusSet uint8

// The optional status flags.
const (
	// DLQStatusFilter is --status.
	DLQStatusFilter DLQStatusSet = 1 << iota
	// DLQNoStatus is --no-status.
	DLQNoStatus
)

// Register adds --consumer and the flags of set.
func (s *DLQStatusFlags) Register(fs *pflag.FlagSet, set DLQStatusSet) {
	fs.StringVar(&s.Consumer, "consumer", "", "consumer whose markers tell the status (default: the group each dead letter names)")
	if set&DLQStatusFilter != 0 {
		fs.StringSliceVar(&s.StatusNames, "status", nil, "only dead letters with this status: "+dlq.StatusNames()+" (repeatable; needs a store)")
	}
	if set&DLQNoStatus != 0 {
		fs.BoolVar(&s.NoStatus, "no-status", false, "do not look statuses up, even with a store configured")
	}
}

// Statuses are the --status values, validated.
func (s *DLQStatusFlags) Statuses() ([]dlq.Status, error) { return dlq.ParseStatuses(s.StatusNames) }

// Validate checks the flags before anything connects: --consumer must be a usable name, and
// --consumer and a status filter need a store (configured by --dsn, the environment or the
// context) and contradict --no-status.
func (s *DLQStatusFlags) Validate(cmd *cobra.Command, d DLQStoreDeps, statusFilter bool) error {
	consumerSet := cmd.Flags().Changed("consumer")
	if consumerSet {
		if err := CheckConsumer(s.Consumer); err != nil {
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

// Open connects to the store when statuses are wanted: a store is configured and
// --no-status is not given. The returned close function is never nil.
func (s *DLQStatusFlags) Open(ctx context.Context, d DLQStoreDeps) (dlq.StatusLookup, func(), error) {
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
	WarnUnknownConsumer(ctx, d.Streams, st, s.Consumer)
	var once sync.Once
	noJournal := func(error) {
		once.Do(func() {
			fmt.Fprintln(d.Streams.ErrOut, "warning: the store has no replay journal (`fieldwork db migrate` creates it): dead letters a replay sent show as pending")
		})
	}
	return dlq.StatusLookup{Store: st, Consumer: s.Consumer, NoJournal: noJournal}, func() { _ = st.Close() }, nil
}

// StatusText is a dead letter's status as the tables show it: its word in its tone
// (internal/look/status, which the triage console shows it by too).
func StatusText(st output.Styles, s dlq.Status) string {
	return st.Of(status.Tone(s)).Render(status.Word(s))
}
