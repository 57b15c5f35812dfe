package demo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/fieldwork/fieldwork/consumer"
	"github.com/fieldwork/fieldwork/inbox"
	"github.com/fieldwork/fieldwork/internal/config"
	"github.com/fieldwork/fieldwork/internal/consume/handlers"
	"github.com/fieldwork/fieldwork/internal/consumerlink"
	"github.com/fieldwork/fieldwork/internal/devstack"
	"github.com/fieldwork/fieldwork/internal/inboxlink"
	"github.com/fieldwork/fieldwork/internal/kafka"
)

// rejecting is the projection "release 1.4": the bundled projection with a bug that rejects
// one event type for good, as a handler that wrongly thinks a transition is illegal does.
// It keeps the wrapped handler's name and tables, as a real release of the same handler
// would, and applies one event at a time (it is no consumer.BatchHandler).
type rejecting struct {
	consumer.Handler
	eventType string
}

func (h rejecting) Handle(ctx context.Context, tx *inbox.Tx, m *consumer.Message) (consumer.Outcome, error) {
	if ev := m.Event; ev.Type == h.eventType {
		return 0, consumer.Permanentf("illegal transition for task %s: a done task cannot be reopened (%s rejected by projection %s)",
			ev.AggregateID, ev.Type, BuggyRelease)
	}
	return h.Handler.Handle(ctx, tx, m)
}

func (h rejecting) Name() string { return h.Handler.(consumer.Namer).Name() }

func (h rejecting) Migrate(ctx context.Context, tx *inbox.Tx) error {
	return h.Handler.(consumer.Migrator).Migrate(ctx, tx)
}

// ConsumeStats are a consumer run's totals (consumer.Stats; Applied is its Processed).
type ConsumeStats struct {
	Records      int64 `json:"records"`
	Applied      int64 `json:"applied"`
	Duplicates   int64 `json:"duplicates"`
	Stale        int64 `json:"stale"`
	DeadLettered int64 `json:"dead_lettered"`
	Retried      int64 `json:"retried"`
	Batches      int64 `json:"batches"`
}

// ConsumeRun is one run of the reference consumer in the story.
type ConsumeRun struct {
	// Release is the projection release the run stands for (BuggyRelease or FixedRelease).
	Release string `json:"release"`
	Handler string `json:"handler"`
	// Rejects is the event type the release rejects ("" for the fixed one).
	Rejects string `json:"rejects,omitempty"`
	ConsumeStats
	// DeadLetteredByReason counts the dead letters this run wrote, by fw.dlq.reason.
	DeadLetteredByReason map[string]int64 `json:"dead_lettered_by_reason"`
	ElapsedMS            int64            `json:"elapsed_ms"`
}

// consumeOnce runs the reference consumer of group Group over tasks with h until it has
// committed every offset that existed when it started, then drains and leaves the group. It
// fails when the consumer stops before that (a fatal error, or idleness with records left).
func (d *Demo) consumeOnce(ctx context.Context, h consumer.Handler, migrate bool) (consumer.Stats, error) {
	st := d.stack.Store()
	if _, err := consumerlink.Prepare(ctx, st, h, migrate); err != nil {
		return consumer.Stats{}, err
	}
	adm := d.cluster.Admin
	ends, err := adm.ListEndOffsets(ctx, TopicTasks)
	if err != nil {
		return consumer.Stats{}, fmt.Errorf("end offsets of %s: %w", TopicTasks, err)
	}
	if err := ends.Error(); err != nil {
		return consumer.Stats{}, fmt.Errorf("end offsets of %s: %w", TopicTasks, err)
	}
	eng, err := consumer.New(inboxlink.NewStore(st).(*inbox.Store), h,
		consumer.Topics(TopicTasks), consumer.Group(Group), consumer.Kafka(d.cluster.Options()...),
		consumer.StopWhenIdle(d.o.StopWhenIdle), consumer.ShutdownTimeout(10*time.Second), consumer.MaxInfraRetries(10))
	if err != nil {
		return consumer.Stats{}, err
	}
	runCtx, cancel := context.WithTimeout(ctx, d.o.ConsumeTimeout)
	defer cancel()
	caughtUp := make(chan struct{})
	go func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-eng.Done():
				return
			case <-tick.C:
			}
			if ok, _ := committedThrough(runCtx, adm, ends); ok {
				close(caughtUp)
				cancel() // drain: nothing is in flight, the engine commits and leaves the group
				return
			}
		}
	}()
	runErr := eng.Run(runCtx)
	if runErr != nil {
		return eng.Stats(), runErr
	}
	if ctx.Err() != nil {
		return eng.Stats(), ctx.Err()
	}
	select {
	case <-caughtUp:
		return eng.Stats(), nil
	default:
	}
	// Stopped by idleness or the timeout: it must have reached the end all the same.
	cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
	defer ccancel()
	ok, err := committedThrough(cctx, adm, ends)
	if err != nil {
		return eng.Stats(), err
	}
	if !ok {
		return eng.Stats(), errors.New("the consumer stopped before committing every record of tasks (see fieldwork consume for the logs)")
	}
	return eng.Stats(), nil
}

// committedThrough reports whether Group has committed, on every partition of ends, an offset
// at or past the end.
func committedThrough(ctx context.Context, adm *kadm.Client, ends kadm.ListedOffsets) (bool, error) {
	committed, err := adm.FetchOffsets(ctx, Group)
	if err != nil {
		return false, err
	}
	ok := true
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset == 0 {
			return
		}
		c, found := committed.Lookup(o.Topic, o.Partition)
		if !found || c.Err != nil || c.At < o.Offset {
			ok = false
		}
	})
	return ok, nil
}

// projection returns the bundled projection handler for the store, wrapped with the bug
// when buggy.
func (d *Demo) projection(buggy bool) (consumer.Handler, error) {
	st := d.stack.Store()
	h, err := handlers.New(handlers.NameProjection, handlers.Config{Consumer: Group, Driver: st.Driver()})
	if err != nil {
		return nil, err
	}
	if buggy {
		return rejecting{Handler: h, eventType: RejectedType}, nil
	}
	return h, nil
}

// ConsumeBuggy is the sandbox's incident (fieldwork dev, docs/design.md §5): release
// BuggyRelease of the projection consumes stack's tasks once as group Group, exactly as step 2
// of the story does, until every partition is committed through the end offsets it found,
// and then leaves the group. The poison is dead-lettered as malformed and every RejectedType
// event as rejected, so that a replay of the rejected dead letters followed by the fixed
// handler (`fieldwork consume --handler projection`) resolves them. The handler's tables are
// migrated first.
func ConsumeBuggy(ctx context.Context, stack *devstack.Stack) (ConsumeRun, error) {
	if stack.Store() == nil {
		return ConsumeRun{}, errors.New("the sandbox's consumer needs a store")
	}
	cluster, err := kafka.Connect(ctx, config.Connection{Brokers: []string{stack.Addr}}, 10*time.Second)
	if err != nil {
		return ConsumeRun{}, err
	}
	defer cluster.Close()
	d := &Demo{o: Options{StopWhenIdle: DefaultStopWhenIdle, ConsumeTimeout: DefaultConsumeTimeout}, n: silent{},
		stack: stack, cluster: cluster, sum: newSummary(0)}
	h, err := d.projection(true)
	if err != nil {
		return ConsumeRun{}, err
	}
	return d.runConsumer(ctx, h, true, BuggyRelease)
}
