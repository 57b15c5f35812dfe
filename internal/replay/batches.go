package replay

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
)

const (
	// batchSize is how many records are classified (and looked up in the store) at once.
	batchSize = 1000
	// classifyAhead is how many batches are classified at once, ahead of the one being
	// handled: the store lookups of the next batches (statuses, markers, the journal's
	// earlier sends) and their reads of originals overlap the handling — the sending — of
	// this one, which would otherwise wait for those round trips every batch.
	classifyAhead = 3
)

// classified is one batch on its way through readBatches: its decisions, by the classifier
// that made them, once done is closed.
type classified struct {
	cls  *classifier
	done chan struct{}
	ds   []decision
	err  error
}

// readBatches reads ranges, classifies the records a batch at a time and calls fn for each in
// order (per partition in offset order). Up to classifyAhead batches are classified at once,
// each by a classifier of its own (newCls), while fn handles the batch before them; fn is
// called from the caller's goroutine only, and a batch's decisions stay valid until fn has
// seen them all. A batch read before the reading failed is still handled, as when batches were
// classified one after another; an error of fn stops the reading and is returned.
func readBatches(ctx context.Context, c *kafka.Cluster, ranges []kafka.PartitionRange, newCls func() *classifier, fn func(*decision) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	free := make(chan *classifier, classifyAhead)
	for range classifyAhead {
		free <- newCls()
	}
	// At most classifyAhead batches hold a classifier: queue never blocks its sender.
	queue := make(chan *classified, classifyAhead)
	var readErr error
	go func() {
		defer close(queue)
		readErr = readAhead(ctx, c, ranges, free, queue)
	}()
	var err error
	for b := range queue {
		<-b.done // every batch is waited for: no classification outlives the call
		if err == nil {
			if err = handleBatch(ctx, b, fn); err != nil {
				cancel(err)
			}
		}
		free <- b.cls
	}
	if err != nil {
		return err
	}
	return readErr // written before queue was closed
}

// handleBatch calls fn for each decision of b, in order; a batch whose classification failed
// because the reading was stopped is an interruption, as the reading's own error is.
func handleBatch(ctx context.Context, b *classified, fn func(*decision) error) error {
	if b.err != nil {
		if ctx.Err() != nil {
			return fwerr.Wrap(fwerr.KindInterrupted, ctx.Err())
		}
		return b.err
	}
	for i := range b.ds {
		if err := fn(&b.ds[i]); err != nil {
			return err
		}
	}
	return nil
}

// readAhead reads ranges into batches of batchSize and starts the classification of each by a
// classifier taken from free (waiting for one), queueing the batches in the order read.
func readAhead(ctx context.Context, c *kafka.Cluster, ranges []kafka.PartitionRange, free chan *classifier, queue chan<- *classified) error {
	batch := make([]*kgo.Record, 0, batchSize)
	submit := func() error {
		if len(batch) == 0 {
			return nil
		}
		var cls *classifier
		select {
		case cls = <-free:
		case <-ctx.Done():
			return fwerr.Wrap(fwerr.KindInterrupted, ctx.Err())
		}
		b := &classified{cls: cls, done: make(chan struct{})}
		recs := batch
		batch = make([]*kgo.Record, 0, batchSize)
		go func() {
			defer close(b.done)
			b.ds, b.err = cls.classify(ctx, recs)
		}()
		queue <- b
		return nil
	}
	err := c.Read(ctx, ranges, func(r *kgo.Record) error {
		batch = append(batch, r)
		if len(batch) == cap(batch) {
			return submit()
		}
		return nil
	})
	if err != nil {
		return err
	}
	return submit()
}
