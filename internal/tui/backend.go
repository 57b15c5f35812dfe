package tui

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/fieldwork/fieldwork/internal/action"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/replay"
)

// Backend is everything the console reads and does. The one implementation (NewBackend) goes
// through the domain paths the commands use: the dead-letter scan and the one status rule of
// `dlq list`, the one replay flow of `replay`, the marker lookup of `processed get`. The model
// tests drive the console with a Backend of their own.
type Backend interface {
	// Read returns the dead-letter topics and the dead letters that arrived since the previous
	// Read (every one the first time), each with its status.
	Read(ctx context.Context) (topics []string, entries []dlq.Entry, err error)
	// Statuses looks the statuses of ds up again, in order.
	Statuses(ctx context.Context, ds []dlq.DeadLetter) ([]dlq.StatusInfo, error)
	// Replay runs the replay flow for the named records of topic: a dry run when reason is
	// "", else executed with that reason, confirm asked before anything is sent.
	Replay(ctx context.Context, topic string, records []string, reason string, confirm func(replay.Check) error, progress func(replay.FlowProgress)) (*replay.FlowResult, error)
	// Processed is what `processed get` reads: the markers of an event, of one consumer.
	Processed(ctx context.Context, eventID, consumer string) ([]dedup.MarkerRow, error)
	// CanReplay says why a replay cannot be executed ("" when it can): no store to journal it.
	CanReplay() string
	// Original reads e's original record from its source topic by the coordinates it names,
	// as `dlq show` does (dlq.Detail.ReadOriginal: a share group's dead letters); nil when
	// e's convention names none to read.
	Original(ctx context.Context, e dlq.Entry) (*dlq.Original, error)
}

// BackendOptions are the clients and the selection of NewBackend.
type BackendOptions struct {
	Cluster *kafka.Cluster
	// Store is the dedup store (statuses, the replay journal, markers); nil: none.
	Store *dedup.Store
	// Lookup tells statuses (dlq.StatusLookup, as `dlq list` builds it); disabled without a store.
	Lookup dlq.StatusLookup
	// Topics are the named dead-letter topics; none: every topic Pattern matches
	// (dlq.DefaultTopicPattern when nil).
	Topics  []string
	Pattern *regexp.Regexp
	// Operator is journaled with every run; NewRunID names a new run.
	Operator string
	NewRunID func() string
	// Rate caps the records a replay sends per second; 0: no cap.
	Rate float64
}

type backend struct {
	o BackendOptions
	// read is set by the first Read; later Reads take what the follow (dlq.Follow) found since.
	read   bool
	mu     sync.Mutex
	new    []dlq.Entry
	topics []string
	err    error
}

// NewBackend is the Backend of the domain packages.
func NewBackend(o BackendOptions) Backend { return &backend{o: o} }

func (b *backend) Read(ctx context.Context) ([]string, []dlq.Entry, error) {
	if b.read {
		b.mu.Lock()
		defer b.mu.Unlock()
		out, err := b.new, b.err
		b.new, b.err = nil, nil
		return b.topics, out, err
	}
	topics, err := dlq.Topics(ctx, b.o.Cluster, b.o.Topics, b.o.Pattern)
	if err != nil {
		return nil, nil, err
	}
	scan, err := dlq.PlanScan(ctx, b.o.Cluster, topics, dlq.ScanOptions{SkipDeleted: len(b.o.Topics) == 0})
	if err != nil {
		return nil, nil, err
	}
	var out []dlq.Entry
	batch := dlq.NewStatusBatcher(b.o.Lookup, 0, func(d dlq.DeadLetter, info dlq.StatusInfo) error {
		out = append(out, dlq.Entry{DeadLetter: d, Status: info})
		return nil
	})
	if _, err := scan.Run(ctx, dlq.Filter{}, func(d dlq.DeadLetter) error { return batch.Add(ctx, d) }); err != nil {
		return nil, nil, err
	}
	if err := batch.Flush(ctx); err != nil {
		return nil, nil, err
	}
	b.read, b.topics = true, topics
	// Live: the dead letters written after the scan's end offsets, as dlq list --follow reads
	// them, until ctx ends.
	go func() {
		var pattern *regexp.Regexp
		if len(b.o.Topics) == 0 {
			pattern = cmp.Or(b.o.Pattern, dlq.DefaultTopicPattern)
		}
		err := dlq.Follow(ctx, scan, dlq.FollowOptions{Lookup: b.o.Lookup, Pattern: pattern}, func(e dlq.Entry) error {
			b.mu.Lock()
			b.new = append(b.new, e)
			if !slices.Contains(b.topics, e.Topic) { // a topic created since (dlq.Follow's Pattern)
				b.topics = append(slices.Clone(b.topics), e.Topic)
				slices.Sort(b.topics)
			}
			b.mu.Unlock()
			return nil
		})
		if err != nil && ctx.Err() == nil {
			b.mu.Lock()
			b.err = err
			b.mu.Unlock()
		}
	}()
	return topics, out, nil
}

func (b *backend) Original(ctx context.Context, e dlq.Entry) (*dlq.Original, error) {
	det := dlq.NewDetail(e)
	if err := det.ReadOriginal(ctx, b.o.Cluster); err != nil {
		return nil, err
	}
	return det.Original, nil
}

func (b *backend) Statuses(ctx context.Context, ds []dlq.DeadLetter) ([]dlq.StatusInfo, error) {
	return b.o.Lookup.Resolve(ctx, ds)
}

func (b *backend) CanReplay() string {
	if b.o.Store == nil {
		return "a replay is journaled in the dedup store: start triage with --dsn (postgres://… or sqlite:PATH) or FIELDWORK_DSN"
	}
	return ""
}

func (b *backend) Replay(ctx context.Context, topic string, records []string, reason string, confirm func(replay.Check) error, progress func(replay.FlowProgress)) (*replay.FlowResult, error) {
	if reason != "" {
		if why := b.CanReplay(); why != "" {
			return &replay.FlowResult{}, fwerr.Usagef("%s", why)
		}
	}
	plan, err := replay.NewPlan(ctx, b.o.Cluster, replay.Spec{From: topic, Addresses: records})
	if err != nil {
		return &replay.FlowResult{}, err
	}
	var h action.Hooks[*replay.FlowResult]
	if confirm != nil {
		h.Confirm = func(res *replay.FlowResult) error { return confirm(res.Check()) }
	}
	if progress != nil {
		h.Progress = func(p action.Progress) { progress(p.Of.(replay.FlowProgress)) }
	}
	out, err := action.Run(ctx, replay.Flow(b.o.Cluster, b.o.Store, plan, replay.FlowOptions{Rate: b.o.Rate}),
		action.Options{Execute: reason != "", Record: action.Record{ID: b.o.NewRunID(), At: time.Now(), Operator: b.o.Operator, Reason: reason}}, h)
	return out.Plan, err
}

func (b *backend) Processed(ctx context.Context, eventID, consumer string) ([]dedup.MarkerRow, error) {
	if b.o.Store == nil {
		return nil, errors.New("no dedup store: start triage with --dsn or FIELDWORK_DSN to look markers up")
	}
	rows, err := b.o.Store.Get(ctx, eventID, consumer)
	if err != nil {
		return nil, fmt.Errorf("processed get %s: %w", eventID, err)
	}
	return rows, nil
}
