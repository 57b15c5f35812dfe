package dlq

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/schema"
)

// DefaultTopicPattern selects the dead-letter topics read when none are named and none is
// configured (docs/design.md §3.2): names ending in a separator (. - _) and dlq, dlt,
// deadletter, dead-letter, dead-letter-queue, deadletterqueue or poison (fieldwork's .dlq,
// Spring's .DLT and -dlt, events-dlq, orders_dlq, payments_poison, orders.deadletter,
// Wolverine's wolverine-dead-letter-queue), names starting with dlq, dlt, deadletter or
// dead-letter and a separator (Kafka Connect's usual dlq-s3-sink, dlq_file_sink), and Spring's
// retry topics (-retry, -retry-N), ASCII case ignored.
var DefaultTopicPattern = regexp.MustCompile(`(?i)(^(dlq|dlt|deadletter|dead-letter)[._-]|[._-](dlq|dlt|deadletter|dead-letter|dead-letter-queue|deadletterqueue|poison)$|-retry(-\d+)?$)`)

// ErrStop, returned by a Scan callback, ends the scan early without an error.
var ErrStop = errors.New("stop the scan")

// Topics resolves which dead-letter topics to read: the named topics, each of which must
// exist (a missing one is a *kafka.UnknownTopicError), or, when none is named, every
// non-internal topic whose name pattern matches (DefaultTopicPattern when nil), sorted. No
// topic matching the pattern is an empty result, not an error.
//
// With the default pattern, the share groups' dead-letter topics are found too, whatever
// their names (shareDLQTopics): those named with the cluster's prefix and those that carry
// errors.deadletterqueue.group.enable=true. A pattern the operator chose is taken as it is.
func Topics(ctx context.Context, c *kafka.Cluster, names []string, pattern *regexp.Regexp) ([]string, error) {
	d, err := Discover(ctx, c, names, pattern)
	return d.Topics, err
}

// Discovery is what Topics found, and why: the pattern's matches and the share groups'
// dead-letter topics added to them.
type Discovery struct {
	// Topics are every topic found, sorted (what Topics returns).
	Topics []string
	// Matched is how many the pattern matched (or were named).
	Matched int
	// Prefixed are the share-group DLQ topics added for their name's prefix (Prefix, the
	// cluster's errors.deadletterqueue.topic.name.prefix) and Flagged those added for
	// errors.deadletterqueue.group.enable=true; both sorted.
	Prefixed, Flagged []string
	Prefix            string
}

// Discover is Topics, saying why each topic was found.
func Discover(ctx context.Context, c *kafka.Cluster, names []string, pattern *regexp.Regexp) (Discovery, error) {
	if len(names) > 0 {
		ts, err := namedTopics(ctx, c, names)
		return Discovery{Topics: ts, Matched: len(ts)}, err
	}
	if pattern == nil {
		pattern = DefaultTopicPattern
	}
	details, err := c.Admin.ListTopics(ctx)
	if err != nil {
		return Discovery{}, fmt.Errorf("list topics: %w", err)
	}
	var out, others []string
	for name, d := range details {
		switch {
		case d.Err != nil || d.IsInternal:
		case pattern.MatchString(name):
			out = append(out, name)
		default:
			others = append(others, name)
		}
	}
	res := Discovery{Matched: len(out)}
	if pattern == DefaultTopicPattern {
		res.Prefix, res.Prefixed, res.Flagged = shareDLQTopics(ctx, c, others)
		out = append(append(out, res.Prefixed...), res.Flagged...)
	}
	slices.Sort(out)
	res.Topics = out
	return res, nil
}

// namedTopics are the named topics, each checked to exist.
func namedTopics(ctx context.Context, c *kafka.Cluster, names []string) ([]string, error) {
	uniq := slices.Clone(names)
	slices.Sort(uniq)
	uniq = slices.Compact(uniq)
	details, err := c.Admin.ListTopics(ctx, uniq...)
	if kafka.IsAuthorization(err) {
		if t := kafka.FirstDenied(ctx, c.Admin, uniq); t != "" {
			return nil, kafka.Denied(err, kafka.OpDescribe, kafka.ResourceTopic, t)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("describe topics: %w", err)
	}
	for _, n := range uniq {
		d, ok := details[n]
		if !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
			return nil, &kafka.UnknownTopicError{Topic: n}
		}
		if d.Err != nil {
			return nil, kafka.Denied(fmt.Errorf("describe topic %s: %w", n, d.Err), kafka.OpDescribe, kafka.ResourceTopic, n)
		}
	}
	return uniq, nil
}

// shareDLQTopics are, of topics, the share groups' dead-letter topics (KIP-1191): named with
// the cluster's errors.deadletterqueue.topic.name.prefix (dlq. by default, which the default
// pattern matches already), or carrying errors.deadletterqueue.group.enable=true, the flag
// without which the broker writes no dead letter to a topic. What the cluster does not let
// the principal read (its configs) finds nothing more: discovery is a convenience, and a
// topic it misses can be named with --topic.
func shareDLQTopics(ctx context.Context, c *kafka.Cluster, topics []string) (prefix string, prefixed, flagged []string) {
	prefix = kafka.DefaultShareDLQPrefix
	if len(topics) == 0 || c.Client == nil {
		return prefix, nil, nil
	}
	if cl, err := kafka.ReadShareDLQCluster(ctx, c.Client); err == nil {
		prefix = cl.Prefix
	}
	var rest []string
	for _, t := range topics {
		if prefix != "" && strings.HasPrefix(t, prefix) {
			prefixed = append(prefixed, t)
		} else {
			rest = append(rest, t)
		}
	}
	slices.Sort(prefixed)
	enabled, err := kafka.ShareDLQTopics(ctx, c.Client, rest...)
	if err != nil {
		return prefix, prefixed, nil
	}
	for _, t := range rest {
		if enabled[t] {
			flagged = append(flagged, t)
		}
	}
	slices.Sort(flagged)
	return prefix, prefixed, flagged
}

// ScanOptions configure a Scan.
type ScanOptions struct {
	// Selection narrows the records read in every topic (kafka.Selection, the one selection
	// type): a time window goes through the broker's time index, so that a window over a
	// large topic does not read it all. The index is by record timestamp; Filter checks each
	// dead letter exactly (Filter.Selection is the window a filter's scan reads).
	Selection kafka.Selection
	// InOrder reads one partition after another, topics and partitions in order, each in
	// offset order (kafka.Cluster.ReadInOrder): the order is deterministic (what a list shows,
	// what a limit keeps). Otherwise every partition is read at once, interleaved.
	InOrder bool
	// Parse is passed to ParseWith for every record.
	Parse ParseOptions
	// Progress, when set, is told how many records have been read of how many offsets were
	// planned (an upper bound: compaction and transaction markers leave gaps). It is called
	// every few thousand records and once at the end, from the scanning goroutine.
	Progress func(done, total int64)
	// SkipDeleted skips a topic deleted after it was found, rather than failing the scan: for
	// topics found by a pattern, where another team's topic may come and go while the scan
	// runs. Topics named by the operator leave it unset, so that one that vanished is an
	// error. Scan.Deleted lists what was skipped.
	SkipDeleted bool
	// Schemas decodes registry-framed keys and values before the filter sees them
	// (DeadLetter.DecodePayloads); nil detects their framing only.
	Schemas *schema.Decoder
	// Ahead parses and filters records on other goroutines (one per core but one, and the
	// scanning goroutine while it would wait) ahead of the callback, for a scan that reads
	// many records and does much with each (dlq list): the callback still gets the same dead
	// letters in the same order, on the scanning goroutine, with the same counts and
	// progress. The read runs up to about a thousand records ahead of the callback, which an
	// ErrStop then leaves unused. On one core it changes nothing.
	Ahead bool
}

// Scan is a planned read of dead-letter topics: the end offsets are fixed when it is planned,
// so dead letters written while it runs are never read (a replay that fails again does not
// make a scan chase its own tail).
type Scan struct {
	c      *kafka.Cluster
	ranges []kafka.PartitionRange
	opts   ScanOptions
	// deleted are the topics skipped because they were deleted (ScanOptions.SkipDeleted).
	deleted []string
}

// Deleted lists the topics skipped because they were deleted after they were found
// (ScanOptions.SkipDeleted), in the order they were found missing.
func (s *Scan) Deleted() []string { return slices.Clone(s.deleted) }

// PlanScan fixes the offset ranges of every partition of topics. A missing topic is a
// *kafka.UnknownTopicError.
func PlanScan(ctx context.Context, c *kafka.Cluster, topics []string, opts ScanOptions) (*Scan, error) {
	s := &Scan{c: c, opts: opts}
	sel := opts.Selection
	if !sel.Since.IsZero() && !sel.Until.IsZero() && !sel.Until.After(sel.Since) {
		return s, nil // an empty window: nothing to read
	}
	for _, t := range topics {
		rs, err := c.Plan(ctx, t, sel)
		// A topic being deleted may answer with another error first (its partitions gone
		// before its name): the cluster is asked.
		var ute *kafka.UnknownTopicError
		if opts.SkipDeleted && err != nil && (errors.As(err, &ute) || (ctx.Err() == nil && s.c.TopicGone(ctx, t))) {
			s.deleted = append(s.deleted, t)
			continue
		}
		if err != nil {
			return nil, err
		}
		s.ranges = append(s.ranges, rs...)
	}
	sort.SliceStable(s.ranges, func(i, j int) bool {
		a, b := s.ranges[i], s.ranges[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
	return s, nil
}

// readRanges is every read of the scan, one partition after another with InOrder
// (kafka.Cluster.ReadInOrder), interleaved otherwise: with SkipDeleted, a topic deleted while
// it is read is skipped (what was read of it stays read) and the other ranges are read on.
func (s *Scan) readRanges(ctx context.Context, ranges []kafka.PartitionRange, fn func(*kgo.Record) error) error {
	var deleted func(string)
	if s.opts.SkipDeleted {
		deleted = func(topic string) { s.deleted = append(s.deleted, topic) }
	}
	if s.opts.InOrder {
		ranges = slices.DeleteFunc(slices.Clone(ranges), func(r kafka.PartitionRange) bool { return slices.Contains(s.deleted, r.Topic) })
		return s.c.ReadInOrder(ctx, ranges, fn, deleted)
	}
	return s.c.ReadSkipping(ctx, ranges, fn, deleted)
}

// Ranges returns the planned ranges, by topic and partition.
func (s *Scan) Ranges() []kafka.PartitionRange { return slices.Clone(s.ranges) }

// Total is the number of offsets planned.
func (s *Scan) Total() int64 { return kafka.Total(s.ranges) }

// ScanResult says how far a scan went.
type ScanResult struct {
	// Read is the number of records read and parsed; Matched how many passed the filter.
	Read, Matched int64
	// Stopped is true when the callback ended the scan with ErrStop.
	Stopped bool
}

// progressEvery is how many records pass between two Progress calls.
const progressEvery = 4096

// reader is how the scan reads each record, for Run and Follow alike: one Parser for the scan
// (what each header key means is worked out once, not per record), one string table (values
// repeat across records), and the payloads decoded through the scan's schemas.
func (s *Scan) reader() func(context.Context, *kgo.Record) DeadLetter {
	popts := s.opts.Parse
	popts.strings = newInterner()
	parser := NewParser(popts)
	return func(ctx context.Context, r *kgo.Record) DeadLetter {
		d := parser.Parse(r)
		d.DecodePayloads(ctx, s.opts.Schemas, r, !popts.NoEnvelope)
		return d
	}
}

// Run reads the planned ranges, parses every record and calls fn with each dead letter that
// f matches. fn returning ErrStop ends the scan (Stopped is set, the error is nil); any other
// error ends it and is returned. The DeadLetter shares memory with the fetched record: fn
// may keep it, the memory stays valid. Run may be called more than once; each call reads
// the same ranges again.
func (s *Scan) Run(ctx context.Context, f Filter, fn func(DeadLetter) error) (ScanResult, error) {
	return s.run(ctx, f, aheadNoJSON, fn)
}

// run is Run; encode has the workers reading ahead (ScanOptions.Ahead) write each dead
// letter's JSON too, for a listing written as JSON.
func (s *Scan) run(ctx context.Context, f Filter, encode aheadJSON, fn func(DeadLetter) error) (ScanResult, error) {
	var res ScanResult
	total := s.Total()
	if s.opts.Progress != nil {
		s.opts.Progress(0, total)
	}
	err := s.read(ctx, s.ranges, f, s.reader(), encode, nil, &res, fn)
	if errors.Is(err, ErrStop) {
		res.Stopped, err = true, nil
	}
	if err != nil {
		return res, err
	}
	s.progressEnd(res)
	return res, nil
}

// progressEnd tells Progress where a scan ended: all of it, or where it was stopped.
func (s *Scan) progressEnd(res ScanResult) {
	if s.opts.Progress == nil {
		return
	}
	if res.Stopped {
		s.opts.Progress(res.Read, s.Total())
	} else {
		s.opts.Progress(s.Total(), s.Total())
	}
}

// read reads ranges (some of the planned ones, or parts of them) as Run does, adding to res
// what it reads and matches and telling Progress every progressEvery records of res.Read.
// Records are parsed by read (Scan.reader), or by workers reading ahead (ScanOptions.Ahead,
// readAhead; encode: and their JSON written). gate, when set, sees each record first, as it
// is read: its kafka.ErrSkipPartition ends the read of the record's partition (InOrder), and
// the record is not parsed. fn's errors, ErrStop included, are returned as they are.
func (s *Scan) read(ctx context.Context, ranges []kafka.PartitionRange, f Filter, read func(context.Context, *kgo.Record) DeadLetter, encode aheadJSON, gate func(*kgo.Record) error, res *ScanResult, fn func(DeadLetter) error) error {
	if n := aheadWorkers(); s.opts.Ahead && n > 0 {
		return s.readAhead(ctx, ranges, f, n, encode, gate, res, fn)
	}
	progress := s.opts.Progress
	total := s.Total()
	each := func(r *kgo.Record) error {
		if gate != nil {
			if err := gate(r); err != nil {
				return err
			}
		}
		res.Read++
		if progress != nil && res.Read%progressEvery == 0 {
			progress(res.Read, total)
		}
		d := read(ctx, r)
		if !f.Match(&d) {
			return nil
		}
		res.Matched++
		return fn(d)
	}
	return s.readRanges(ctx, ranges, each)
}

// readAhead is read through workers (aheadReader): the same reads, the same errors, and
// what was read before an error handed to fn first, as read hands it on.
func (s *Scan) readAhead(ctx context.Context, ranges []kafka.PartitionRange, f Filter, workers int, encode aheadJSON, gate func(*kgo.Record) error, res *ScanResult, fn func(DeadLetter) error) error {
	a := newAheadReader(ctx, s, workers, f, encode, res, fn)
	defer a.close()
	add := a.add
	if gate != nil {
		add = func(r *kgo.Record) error {
			if err := gate(r); err != nil {
				return err
			}
			return a.add(r)
		}
	}
	return a.end(s.readRanges(ctx, ranges, add))
}
