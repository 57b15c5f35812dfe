package dlq

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/timespec"
)

// Retention is how a dead-letter topic's records leave it: kafka.Retention, the one reader
// of retention, so that dlq stats, processed prune and inspect topic agree.
type Retention = kafka.Retention

// DescribeRetention reads the retention of topics (kafka.Cluster.Retention): every topic is
// in the map, one whose configs could not be read or do not say is kafka.RetentionUnknown
// with the reason. Only a cluster that does not answer at all is an error.
func DescribeRetention(ctx context.Context, c *kafka.Cluster, topics []string) (map[string]Retention, error) {
	return c.Retention(ctx, topics)
}

// RetentionWarning is how close to deletion by retention the oldest dead letter of a topic
// may come before Summarise flags it.
const RetentionWarning = 24 * time.Hour

// TopicSummary is one dead-letter topic's figures in a StatsReport.
type TopicSummary struct {
	Topic       string     `json:"topic"`
	Count       int64      `json:"count"`
	Oldest      *time.Time `json:"oldest"`
	Newest      *time.Time `json:"newest"`
	InWindow    int64      `json:"in_window"`
	RatePerHour float64    `json:"rate_per_hour"`
	// Retention is the topic's, its state unknown (with why) when the cluster did not say;
	// nil when none was given to Summarise.
	Retention *Retention `json:"retention"`
	// OldestDeletableAt is when the oldest dead letter becomes old enough for retention to
	// delete it (null when retention never deletes by age, or there is none). Kafka deletes
	// whole segments, so it may live a little longer, never less (unless retention.bytes
	// deletes first).
	OldestDeletableAt *time.Time `json:"oldest_deletable_at"`
	// RetentionWarning is set when OldestDeletableAt is less than RetentionWarning away (or
	// past).
	RetentionWarning bool `json:"retention_warning"`
	// Statuses counts dead letters by status when a store was given; nil otherwise.
	Statuses *StatusCounts `json:"status,omitempty"`
}

// setRetention records the topic's retention and, when it is known and the topic holds a
// dead letter, when the oldest becomes deletable and whether that is less than
// RetentionWarning from now. An unknown retention sets neither: no deadline is guessed.
func (t *TopicSummary) setRetention(r Retention, now time.Time) {
	t.Retention = &r
	t.OldestDeletableAt, t.RetentionWarning = nil, false
	if horizon, known := r.Known(); known && t.Oldest != nil {
		at := t.Oldest.Add(horizon)
		t.OldestDeletableAt = &at
		t.RetentionWarning = at.Sub(now) < RetentionWarning
	}
}

// Warnings are the sentences an operator should read about retention, one per topic that
// needs one: its oldest dead letter is past retention or less than RetentionWarning from it
// (replay or copy it first), or its retention is unknown while it holds dead letters (then
// no deadline can be given, and none is assumed).
func (r *StatsReport) Warnings() []string {
	var out []string
	for _, t := range r.Topics {
		switch {
		case t.RetentionWarning:
			in, _ := t.DeletableIn(r.Now)
			written := timespec.FormatTime(*t.Oldest)
			if in <= 0 {
				out = append(out, fmt.Sprintf("the oldest dead letter in %s (written %s) is past retention (%s) by %s: Kafka may delete it at any time",
					t.Topic, written, t.Retention.Describe(), FormatAge(-in)))
			} else {
				out = append(out, fmt.Sprintf("the oldest dead letter in %s (written %s) becomes deletable by retention (%s) in %s: replay or copy it before then",
					t.Topic, written, t.Retention.Describe(), FormatAge(in)))
			}
		case t.Count > 0 && t.Retention != nil && t.Retention.State == kafka.RetentionUnknown:
			out = append(out, fmt.Sprintf("cannot tell when retention deletes the dead letters in %s: %s", t.Topic, t.Retention.Why))
		}
	}
	return out
}

// DeletableIn is how long until OldestDeletableAt, from now (negative when past); ok is false
// when there is no such time.
func (t TopicSummary) DeletableIn(now time.Time) (time.Duration, bool) {
	if t.OldestDeletableAt == nil {
		return 0, false
	}
	return t.OldestDeletableAt.Sub(now), true
}

// StatsReport is what `dlq stats` reports.
type StatsReport struct {
	// Now is when the report was made: the rate window and retention deadlines count from it.
	Now time.Time `json:"now"`
	// Window is the rate window, as timespec.Format writes it ("1d", "1h30m").
	Window string `json:"window"`
	// WindowMS is Window in milliseconds.
	WindowMS int64      `json:"window_ms"`
	GroupBy  []StatsKey `json:"group_by"`
	// RecordsRead is how many records the scan read; Matched how many passed the filter.
	RecordsRead int64          `json:"records_read"`
	Matched     int64          `json:"matched"`
	Topics      []TopicSummary `json:"topics"`
	Groups      []GroupStats   `json:"groups"`
}

// SummaryOptions configure Summarise.
type SummaryOptions struct {
	Filter Filter
	// By is the grouping of Groups (none: one group of everything).
	By []StatsKey
	// Window is the rate window (0: no rate).
	Window time.Duration
	// Now anchors the window and the retention deadlines.
	Now time.Time
	// Lookup tells statuses; without a store no status is counted.
	Lookup StatusLookup
	// Retention holds each topic's retention (from DescribeRetention); a topic missing from it
	// has none reported.
	Retention map[string]Retention
}

// Summarise runs s and aggregates what passes the filter while it streams: per topic of
// topics (every one listed, an empty one with a count of 0) and per group of o.By. Memory is
// bounded by the number of groups (and a status batch), whatever the number of records.
func Summarise(ctx context.Context, s *Scan, topics []string, o SummaryOptions) (*StatsReport, error) {
	perTopic, err := NewStats([]StatsKey{ByTopic}, o.Window, o.Now)
	if err != nil {
		return nil, err
	}
	groups, err := NewStats(o.By, o.Window, o.Now)
	if err != nil {
		return nil, err
	}
	withStatus := o.Lookup.Enabled()
	b := NewStatusBatcher(o.Lookup, 0, func(d DeadLetter, info StatusInfo) error {
		perTopic.AddStatus(&d, info.Status)
		groups.AddStatus(&d, info.Status)
		return nil
	})
	res, err := s.Run(ctx, o.Filter, func(d DeadLetter) error {
		if !withStatus { // counted at once: nothing is held
			perTopic.Add(&d)
			groups.Add(&d)
			return nil
		}
		// Keep only what the aggregates and the status lookup read (the position: the replay
		// journal knows dead letters by it): the batch then holds no record memory.
		return b.Add(ctx, DeadLetter{
			Topic: d.Topic, Partition: d.Partition, Offset: d.Offset, Timestamp: d.Timestamp,
			OriginalTopic: d.OriginalTopic, Reason: d.Reason, ErrorClass: d.ErrorClass, Group: d.Group, EventID: d.EventID,
			KeySchema: d.KeySchema.Slim(), ValueSchema: d.ValueSchema.Slim(),
			ErrorMessage: d.ErrorMessage, // the fingerprint's (a string the parser shares, no record memory)
		})
	})
	if err == nil {
		err = b.Flush(ctx)
	}
	if err != nil {
		return nil, err
	}

	rep := &StatsReport{
		Now: o.Now, Window: timespec.Format(o.Window), WindowMS: o.Window.Milliseconds(), GroupBy: slices.Clone(o.By),
		RecordsRead: res.Read, Matched: res.Matched, Groups: groups.Result(),
	}
	if rep.GroupBy == nil {
		rep.GroupBy = []StatsKey{}
	}
	byTopic := map[string]GroupStats{}
	for _, g := range perTopic.Result() {
		byTopic[g.Topic] = g
	}
	for _, t := range topics {
		g := byTopic[t]
		ts := TopicSummary{Topic: t, Count: g.Count, InWindow: g.InWindow, RatePerHour: g.RatePerHour, Statuses: g.Statuses}
		if withStatus && ts.Statuses == nil {
			ts.Statuses = &StatusCounts{}
		}
		if !g.Oldest.IsZero() {
			oldest, newest := g.Oldest, g.Newest
			ts.Oldest, ts.Newest = &oldest, &newest
		}
		if r, ok := o.Retention[t]; ok {
			ts.setRetention(r, o.Now)
		}
		rep.Topics = append(rep.Topics, ts)
	}
	if rep.Topics == nil {
		rep.Topics = []TopicSummary{}
	}
	return rep, nil
}

// FormatAge writes a duration the way an operator reads an age: the two largest units, e.g.
// 3d4h, 5h12m, 42m10s, 17s; under a second is 0s. Negative durations get a leading minus.
func FormatAge(d time.Duration) string {
	if d < 0 {
		return "-" + FormatAge(-d)
	}
	units := []struct {
		n time.Duration
		s string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}}
	for i, u := range units {
		if d >= u.n || i == len(units)-1 {
			out := strconv.FormatInt(int64(d/u.n), 10) + u.s
			if i+1 < len(units) {
				if r := (d % u.n) / units[i+1].n; r > 0 {
					out += strconv.FormatInt(int64(r), 10) + units[i+1].s
				}
			}
			return out
		}
	}
	return "0s"
}
