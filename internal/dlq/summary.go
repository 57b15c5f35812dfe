package dlq

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fieldwork/fieldwork/internal/kafka"
)

// Retention is how a topic's old records are removed, from its configs.
type Retention struct {
	// CleanupPolicy is cleanup.policy: "delete", "compact" or "compact,delete".
	CleanupPolicy string `json:"cleanup_policy"`
	// Ms is retention.ms; -1 keeps records forever.
	Ms int64 `json:"retention_ms"`
}

// DeletesByAge reports whether records are deleted once older than Ms: the policy includes
// delete and Ms is not -1.
func (r Retention) DeletesByAge() bool {
	return slices.Contains(strings.Split(r.CleanupPolicy, ","), "delete") && r.Ms >= 0
}

// Describe says in a few words how records leave the topic: "7d", "forever", "compacted".
func (r Retention) Describe() string {
	if !slices.Contains(strings.Split(r.CleanupPolicy, ","), "delete") {
		return "compacted: not deleted by age"
	}
	if r.Ms < 0 {
		return "forever"
	}
	d := FormatAge(time.Duration(r.Ms) * time.Millisecond)
	if slices.Contains(strings.Split(r.CleanupPolicy, ","), "compact") {
		return d + " (and compacted)"
	}
	return d
}

// DescribeRetention reads cleanup.policy and retention.ms of topics (their effective values,
// broker defaults included).
func DescribeRetention(ctx context.Context, c *kafka.Cluster, topics []string) (map[string]Retention, error) {
	out := make(map[string]Retention, len(topics))
	if len(topics) == 0 {
		return out, nil
	}
	rcs, err := c.Admin.DescribeTopicConfigs(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("describe topic configs: %w", err)
	}
	for _, rc := range rcs {
		if rc.Err != nil {
			return nil, fmt.Errorf("configs of %s: %w", rc.Name, rc.Err)
		}
		r := Retention{CleanupPolicy: "delete", Ms: 7 * 24 * 3600 * 1000}
		for _, cf := range rc.Configs {
			if cf.Value == nil {
				continue
			}
			switch cf.Key {
			case "cleanup.policy":
				r.CleanupPolicy = strings.ReplaceAll(*cf.Value, " ", "")
			case "retention.ms":
				if n, err := strconv.ParseInt(*cf.Value, 10, 64); err == nil {
					r.Ms = n
				}
			}
		}
		out[rc.Name] = r
	}
	return out, nil
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
	// Retention is the topic's; nil when its configs could not be read.
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
	// Window is the rate window, as a Go duration ("24h0m0s").
	Window  string     `json:"window"`
	GroupBy []StatsKey `json:"group_by"`
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
		if withStatus {
			perTopic.AddStatus(d, info.Status)
			groups.AddStatus(d, info.Status)
		} else {
			perTopic.Add(d)
			groups.Add(d)
		}
		return nil
	})
	res, err := s.Run(ctx, o.Filter, func(d DeadLetter) error {
		// Keep only what the aggregates and the status lookup read (the position: the replay
		// journal knows dead letters by it): the batch then holds no record memory.
		return b.Add(ctx, DeadLetter{
			Topic: d.Topic, Partition: d.Partition, Offset: d.Offset, Timestamp: d.Timestamp,
			OriginalTopic: d.OriginalTopic, Reason: d.Reason, ErrorClass: d.ErrorClass, Group: d.Group, EventID: d.EventID,
		})
	})
	if err == nil {
		err = b.Flush(ctx)
	}
	if err != nil {
		return nil, err
	}

	rep := &StatsReport{
		Now: o.Now, Window: o.Window.String(), GroupBy: slices.Clone(o.By),
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
			ts.Retention = &r
			if r.DeletesByAge() && ts.Oldest != nil {
				at := ts.Oldest.Add(time.Duration(r.Ms) * time.Millisecond)
				ts.OldestDeletableAt = &at
				ts.RetentionWarning = at.Sub(o.Now) < RetentionWarning
			}
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
