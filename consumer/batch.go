package consumer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/inbox"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/envelope"
	"github.com/fieldwork/fieldwork/internal/inboxlink"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/schema"
)

// savepoint is the name of the savepoint each event is handled under.
const savepoint = "fw_event"

// item is one record of a batch: its message, the event decoded once.
type item struct {
	Message
	// dup: the event id already occurred earlier in the batch.
	dup bool
}

// deadLetter is a record to dead-letter once the transaction has committed.
type deadLetter struct {
	rec  *kgo.Record
	meta dlq.Meta
	// release: not a dead letter but a share-group record to release for another delivery
	// (a retryable failure before the group's delivery limit); meta says why.
	release bool
}

// unitResult counts what one transaction did.
type unitResult struct {
	processed, stale, duplicates, retried int
	deadLetters                           []deadLetter
	// released are the share-group records to release (deadLetter.release), their markers
	// removed in the transaction.
	released []deadLetter
	// staleIDs are the events the handler ignored as stale: their markers record it
	// (dedup.OutcomeStale) in the transaction that claimed them.
	staleIDs []string
}

func (r *unitResult) add(o unitResult) {
	r.processed += o.processed
	r.stale += o.stale
	r.duplicates += o.duplicates
	r.retried += o.retried
	r.deadLetters = append(r.deadLetters, o.deadLetters...)
	r.released = append(r.released, o.released...)
	r.staleIDs = append(r.staleIDs, o.staleIDs...)
}

// infraError is a failure of the database (or of the handler's access to it) that retrying
// the whole transaction may cure.
type infraError struct{ err error }

func (e *infraError) Error() string { return e.err.Error() }
func (e *infraError) Unwrap() error { return e.err }

// fatalStoreError reports errors that retrying cannot cure: the store is not migrated (or
// was migrated by a newer binary), or the input cannot be stored.
func fatalStoreError(err error) bool {
	var inv *dedup.InvalidInputError
	return errors.Is(err, dedup.ErrNotMigrated) || errors.As(err, &inv)
}

// runBatch handles one batch of one partition: decode; dedupe by event id; one transaction
// that claims the fresh events and applies each under a savepoint (or one transaction per
// event with TxPerEvent); commit; produce the dead letters and wait for their acks; then
// commit the Kafka offset. It returns a *HaltedError when a dead letter could not be written
// at all (the offsets before its record are committed; the partition stops there), and
// another error only when the runner must stop (or the worker was aborted); every other
// failure is retried here.
func (e *Runner) runBatch(w *worker, recs []*kgo.Record, hw int64) error {
	start := time.Now()
	b, err := e.handleBatch(w, recs, true)
	if err != nil {
		return err
	}

	// Done: every record of the batch, or, when a dead letter could not be written at all,
	// every record before it (their effects and dead letters are in; the record itself is
	// read again by whoever consumes the partition next), or every record before the
	// breaker's cut.
	last := recs[len(recs)-1]
	done := kgo.EpochOffset{Epoch: last.LeaderEpoch, Offset: last.Offset + 1}
	switch {
	case b.halt != nil:
		done = kgo.EpochOffset{Epoch: last.LeaderEpoch, Offset: b.halt.Offset}
	case b.cut >= 0:
		done = kgo.EpochOffset{Epoch: last.LeaderEpoch, Offset: b.cut}
	}
	w.finish(done)
	w.commitSoon()

	dls := b.dls
	if b.halt == nil {
		e.clearHalt(w.tp, done.Offset)
	} else {
		// The dead letters at and after the halted record are not counted: they are sent
		// again (or given up on again) when the record is read again.
		dls = slices.DeleteFunc(dls, func(dl deadLetter) bool { return dl.rec.Offset >= b.halt.Offset })
	}
	e.m.setLag(w.tp.topic, w.tp.partition, hw-done.Offset)
	e.countBatch(w.tp, recs, start, b.records, b.other, b.res, dls, writerFieldwork)
	if b.halt != nil {
		return b.halt
	}
	if b.cut >= 0 {
		return errBreakerCut
	}
	return nil
}

// handled is what handleBatch did with one batch.
type handled struct {
	// records counts the decoded and malformed records, other those for another group.
	records, other int
	res            unitResult
	// dls are the batch's dead letters as the breaker let them through, in offset order:
	// produced when handleBatch was asked to, else for the broker to write (share groups).
	dls []deadLetter
	// cut is the breaker's cut (-1: none): nothing from that offset on is settled.
	cut int64
	// halt is the first dead letter that could not be written at all (produce only).
	halt *HaltedError
}

// handleBatch is the part of a batch both kinds of group share: decode, apply the fresh
// events in one transaction (or one each with TxPerEvent), let the breaker judge the dead
// letters and, with produce, write them and wait for their acknowledgements. What is then
// committed to the group (an offset, or acknowledgements) is the caller's.
func (e *Runner) handleBatch(w *worker, recs []*kgo.Record, produce bool) (handled, error) {
	ctx := w.ctx
	ahead := e.beginAhead(ctx)
	defer ahead.release(ctx)
	items, malformed, other, err := e.decodeWithRetry(ctx, w, recs, ahead)
	if err != nil {
		return handled{}, err
	}
	res, err := e.applyUnits(ctx, w, items, ahead)
	if err != nil {
		return handled{}, err
	}
	dls, cut := e.judgeDeadLetters(w, items, append(malformed, res.deadLetters...))
	b := handled{records: len(items) + len(malformed), other: other, res: res, dls: dls, cut: cut}
	if produce {
		if b.halt, err = e.produceDeadLetters(ctx, w, dls); err != nil {
			return handled{}, err
		}
	}
	return b, nil
}

// applyUnits applies the decoded items: in one transaction (the first attempt in ahead's),
// or one transaction each with TxPerEvent.
func (e *Runner) applyUnits(ctx context.Context, w *worker, items []*item, ahead *txAhead) (unitResult, error) {
	units := [][]*item{items}
	if e.o.TxPerEvent {
		units = units[:0]
		for _, it := range items {
			units = append(units, []*item{it})
		}
	}
	var res unitResult
	for _, unit := range units {
		r, err := e.applyWithRetry(ctx, w, unit, ahead)
		if err != nil {
			return res, err
		}
		res.add(r)
	}
	return res, nil
}

// judgeDeadLetters puts the batch's dead letters in offset order and lets the dead-letter
// breaker judge the batch before any of them is written: from the record where it trips (or,
// tripped already, from the batch's first failed record) nothing is dead-lettered nor
// committed. The effects and markers of the records handled after that point are committed
// already: read again, they are duplicates. It returns the dead letters to write and the
// breaker's cut (-1: none).
func (e *Runner) judgeDeadLetters(w *worker, items []*item, dls []deadLetter) ([]deadLetter, int64) {
	slices.SortFunc(dls, func(a, b deadLetter) int { return int(a.rec.Offset - b.rec.Offset) })
	cut, trip := e.br.judge(w.tp, judgedOf(items, dls))
	if cut >= 0 {
		dls = slices.DeleteFunc(dls, func(dl deadLetter) bool { return dl.rec.Offset >= cut })
	}
	if trip != nil {
		e.tripped(w.tp, trip)
	}
	return dls, cut
}

// Who writes a batch's dead letters: the label writer of fieldwork_consume_dead_letters_total.
const (
	writerFieldwork = "fieldwork" // fieldwork's own dead-letter writer (a consumer group, or a share group without a DLQ)
	writerBroker    = "broker"    // the broker, into a share group's DLQ (KIP-1191)
)

// countBatch adds a handled batch of k to the counters and metrics and logs it: records
// counts the decoded and malformed records, other those of another group, dls the dead
// letters written (by writer).
func (e *Runner) countBatch(k tp, recs []*kgo.Record, start time.Time, records, other int, res unitResult, dls []deadLetter, writer string) {
	topic := k.topic
	e.c.batches.Add(1)
	e.c.records.Add(int64(records + other))
	e.c.otherGroup.Add(int64(other))
	e.m.events.WithLabelValues(topic, OutcomeOtherGroup).Add(float64(other))
	e.c.processed.Add(int64(res.processed))
	e.c.stale.Add(int64(res.stale))
	e.c.duplicates.Add(int64(res.duplicates))
	e.c.retried.Add(int64(res.retried))
	e.c.deadLettered.Add(int64(len(dls)))
	e.m.events.WithLabelValues(topic, OutcomeProcessed).Add(float64(res.processed))
	e.m.events.WithLabelValues(topic, OutcomeStale).Add(float64(res.stale))
	e.m.events.WithLabelValues(topic, OutcomeDuplicate).Add(float64(res.duplicates))
	e.m.events.WithLabelValues(topic, OutcomeRetried).Add(float64(res.retried))
	e.m.events.WithLabelValues(topic, OutcomeDeadLettered).Add(float64(len(dls)))
	for _, dl := range dls {
		e.m.deadLetters.WithLabelValues(topic, dl.meta.Reason, writer).Inc()
	}
	e.m.batchSeconds.WithLabelValues(topic).Observe(time.Since(start).Seconds())
	e.log.Debug("batch done", "topic", topic, "partition", k.partition,
		"first_offset", recs[0].Offset, "last_offset", recs[len(recs)-1].Offset, "records", len(recs),
		"processed", res.processed, "duplicates", res.duplicates, "stale", res.stale,
		"dead_lettered", len(dls), "released", len(res.released), "elapsed", time.Since(start).String())
}

// errBreakerCut ends a worker whose batch the tripped breaker cut: the runner is stopping.
var errBreakerCut = errors.New("the dead-letter breaker has tripped")

// judgedOf is the batch's records as the breaker judges them, in offset order: the items
// (handled, duplicates included, or failed) and the malformed records, each with its dead
// letter when it failed. Transaction markers and records for another group are not judged.
func judgedOf(items []*item, dls []deadLetter) []judged {
	if len(dls) == 0 { // the common batch: nothing failed, nothing to merge or sort
		out := make([]judged, len(items))
		for i, it := range items {
			out[i] = judged{offset: it.Record.Offset}
		}
		return out
	}
	failed := make(map[int64]*deadLetter, len(dls))
	for i := range dls {
		failed[dls[i].rec.Offset] = &dls[i]
	}
	out := make([]judged, 0, len(items)+len(dls))
	for _, it := range items {
		if _, ok := failed[it.Record.Offset]; !ok {
			out = append(out, judged{offset: it.Record.Offset})
		}
	}
	for i := range dls {
		out = append(out, judged{offset: dls[i].rec.Offset, dl: &dls[i]})
	}
	slices.SortFunc(out, func(a, b judged) int { return cmp.Compare(a.offset, b.offset) })
	return out
}

// decodeWithRetry is decode, retried with InfraBackoff while the schema registry a framed
// value needs does not answer (an infrastructure failure: never a dead letter). A registry
// that refuses the credentials, or none configured for a framed value, stops the runner. The
// transaction begun ahead is rolled back before the first wait: it is begun again after.
func (e *Runner) decodeWithRetry(ctx context.Context, w *worker, recs []*kgo.Record, ahead *txAhead) ([]*item, []deadLetter, int, error) {
	r := e.o.InfraBackoff.start()
	for {
		items, bad, other, err := e.decode(ctx, recs)
		if err == nil {
			return items, bad, other, nil
		}
		se, ok := errors.AsType[*schema.Error](err)
		if !ok {
			return nil, nil, 0, err
		}
		if se.Problem != schema.ProblemUnavailable {
			return nil, nil, 0, se.Kinded()
		}
		if ctx.Err() != nil {
			return nil, nil, 0, ctx.Err()
		}
		ahead.release(ctx)
		stop := func(n int) error {
			return fmt.Errorf("%s/%d: giving up after %d infrastructure retries: %w", w.tp.topic, w.tp.partition, n, se.Kinded())
		}
		if err := e.infraRetry(ctx, r, stop, "schema_registry", "schema registry unavailable; retrying the batch", err,
			"topic", w.tp.topic, "partition", w.tp.partition, "first_offset", recs[0].Offset); err != nil {
			return nil, nil, 0, err
		}
		e.o.Schemas.Retry()
	}
}

// decode turns records into items and dead-letters the malformed ones. Transaction markers
// (control records, which the runner asks for so that its committed offset can pass a marker
// at the end of the log) are skipped, and so are replayed records aimed at another consumer
// group (fw.replay.for, docs/design.md §3.3), counted in other: they are not this group's to
// handle, and a marker would make this group skip the event when a replay is aimed at it.
// A registry-framed value is decoded through the schema registry first and its envelope read
// from the decoded value (docs/design.md §3.6): one whose schema the registry does not know is
// dead-lettered as unsupported (and so is a framed value when no registry is configured), one
// that does not match its schema as malformed; a failure of the registry itself is returned,
// for the batch to wait for it.
func (e *Runner) decode(ctx context.Context, recs []*kgo.Record) (items []*item, bad []deadLetter, other int, err error) {
	items = make([]*item, 0, len(recs))
	seen := make(map[string]struct{}, len(recs))
	for _, rec := range recs {
		if rec.Attrs.IsControl() {
			continue
		}
		if g := dlq.ReplayedFor(rec.Headers); g != "" && g != e.o.Group {
			other++
			continue
		}
		ev, _, err := e.o.Schemas.Event(ctx, rec)
		if se, ok := errors.AsType[*schema.Error](err); ok && se.Registry() {
			return nil, nil, 0, se
		}
		if err == nil {
			err = dedup.ValidateEventID(ev.ID)
		}
		if err != nil {
			var id string
			var me *envelope.MalformedError
			if errors.As(err, &me) {
				id = me.EventID
			}
			reason := dlq.ReasonMalformed
			// A schema the registry does not know, or a framed value with no registry to ask
			// (a misconfiguration or hostile bytes that look framed): not readable here, but
			// perhaps elsewhere, so unsupported, never a stalled partition (design §3.6).
			if se, ok := errors.AsType[*schema.Error](err); ok && (se.Problem == schema.ProblemUnknownSchema || se.Problem == schema.ProblemNoRegistry) {
				reason = dlq.ReasonUnsupported
			}
			now := time.Now()
			bad = append(bad, deadLetter{rec: rec, meta: e.meta(rec, reason, id, err, 1, now, now)})
			continue
		}
		_, dup := seen[ev.ID]
		seen[ev.ID] = struct{}{}
		items = append(items, &item{Message: Message{Event: eventOf(ev), Record: rec}, dup: dup})
	}
	return items, bad, other, nil
}

func (e *Runner) meta(rec *kgo.Record, reason, eventID string, err error, attempts int, first, last time.Time) dlq.Meta {
	m := dlq.Meta{
		Topic: e.o.dlqTopic(rec.Topic), Group: e.o.Group, Handler: e.o.Name,
		EventID: eventID, Reason: reason, Error: err.Error(), ErrorClass: ErrorClass(err), Attempts: attempts,
		FirstFailedAt: first, FailedAt: last,
	}
	// A value its schema could not read names that schema (fw.dlq.schema), and the problem
	// is its class: what triage by schema needs (docs/design.md §3.6).
	if se, ok := errors.AsType[*schema.Error](err); ok {
		m.Schema = se.Ref.String()
		if m.ErrorClass == "" {
			m.ErrorClass = "schema_" + string(se.Problem)
		}
	}
	return m
}

// applyAlone applies recs, one partition's in offset order, as a worker applies a batch,
// without Kafka nor retries (consumerlink.ApplyBatch): decoded, then one transaction through
// the batch path. It returns the events processed; a record that would be dead-lettered is
// an error.
func (e *Runner) applyAlone(ctx context.Context, recs []*kgo.Record) (int, error) {
	items, bad, _, err := e.decode(ctx, recs)
	if err == nil && len(bad) > 0 {
		err = fmt.Errorf("%s: %s", kafka.AddressOf(bad[0].rec), bad[0].meta.Error)
	}
	if err != nil {
		return 0, err
	}
	batch := e.batchHandler() != nil
	res, err := e.applyUnit(ctx, items, batch, batch, nil)
	return res.processed, err
}

// applyWithRetry runs one transaction over items, retrying the whole of it after
// infrastructure failures with capped exponential backoff and jitter. With a BatchHandler
// (and neither PerEvent nor TxPerEvent) the transaction applies the batch through
// HandleBatch; when that fails as a whole for a reason that is not infrastructure, the
// transaction is rolled back and run again with each event under its own savepoint.
func (e *Runner) applyWithRetry(ctx context.Context, w *worker, items []*item, ahead *txAhead) (unitResult, error) {
	batch := e.batchHandler() != nil
	claiming := batch
	r := e.o.InfraBackoff.start()
	for {
		res, err := e.applyUnit(ctx, items, batch, claiming, ahead)
		if errors.Is(err, errNotAllFresh) && ctx.Err() == nil {
			// Some events were claimed before (or the handler's part refused the batch): the
			// statement wrote nothing; claim first, then apply the fresh ones.
			e.log.Debug("batch has events claimed before; claiming first", "topic", w.tp.topic, "partition", w.tp.partition,
				"first_offset", items[0].Record.Offset, "records", len(items))
			claiming = false
			res, err = e.applyUnit(ctx, items, batch, false, ahead)
		}
		var fb *batchFallback
		if errors.As(err, &fb) && ctx.Err() == nil {
			batch = false
			e.c.batchFallbacks.Add(1)
			e.m.batchFallbacks.Inc()
			e.log.Warn("batch statement failed; applying the batch event by event", "topic", w.tp.topic, "partition", w.tp.partition,
				"first_offset", items[0].Record.Offset, "records", len(items), "error", fb.err)
			res, err = e.applyUnit(ctx, items, false, false, ahead)
		}
		if err == nil {
			if r.n > 0 {
				e.log.Info("batch succeeded after infrastructure retries", "topic", w.tp.topic, "partition", w.tp.partition, "retries", r.n)
			}
			return res, nil
		}
		if ctx.Err() != nil {
			return unitResult{}, ctx.Err()
		}
		if fatalStoreError(err) {
			return unitResult{}, err
		}
		stop := func(n int) error {
			return fmt.Errorf("%s/%d: giving up after %d infrastructure retries: %w", w.tp.topic, w.tp.partition, n, err)
		}
		msg := "batch failed on infrastructure; rolled back, retrying"
		if errNoDeadLetter(err) {
			msg = "handler failed and the handler chain has no dead-letter step: batch rolled back, retrying it as after an infrastructure failure"
		}
		if err := e.infraRetry(ctx, r, stop, "batch", msg, err,
			"topic", w.tp.topic, "partition", w.tp.partition, "first_offset", items[0].Record.Offset); err != nil {
			return unitResult{}, err
		}
	}
}

// batchHandler is the handler's batch path when the runner uses it (docs/design.md §3.5).
func (e *Runner) batchHandler() BatchHandler {
	if e.o.PerEvent || e.o.TxPerEvent {
		return nil
	}
	bh, _ := e.o.Handler.(BatchHandler)
	return bh
}

// batchFallback is a failure of HandleBatch as a whole that is not infrastructure: the
// transaction was rolled back, and the batch is applied again event by event.
type batchFallback struct{ err error }

func (e *batchFallback) Error() string { return "batch handler: " + e.err.Error() }
func (e *batchFallback) Unwrap() error { return e.err }

// applyUnit is one transaction (ahead's, when not taken yet): BEGIN; claim the batch's events
// in one statement; apply the fresh ones in offset order, through HandleBatch when batch is
// set, else each under a savepoint; COMMIT. With claiming (and a ClaimingBatchHandler) the
// claim and HandleBatch's writes are one statement, a transaction of its own (applyClaimed). A failed event is rolled back to its savepoint and its marker deleted
// (Unclaim) before the savepoint is released, so it commits unmarked and is dead-lettered
// after the commit. Any error returned means the transaction was rolled back.
func (e *Runner) applyUnit(ctx context.Context, items []*item, batch, claiming bool, ahead *txAhead) (res unitResult, err error) {
	markers := make([]dedup.Marker, 0, len(items))
	for _, it := range items {
		if it.dup {
			continue
		}
		markers = append(markers, dedup.Marker{
			EventID: it.Event.ID, Topic: it.Record.Topic, Partition: it.Record.Partition, Offset: it.Record.Offset,
			AggregateID: it.Event.AggregateID, AggregateVersion: it.Event.Version, Versioned: it.Event.HasVersion,
		})
	}
	if len(markers) == 0 {
		res.duplicates = len(items)
		return res, nil
	}
	if part, ok := e.claimedBatch(items, batch && claiming); ok {
		return e.applyClaimed(ctx, items, markers, part)
	}
	st := e.o.Store
	tx, err := ahead.begin(ctx, st)
	if err != nil {
		return res, err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	verdicts, err := st.ClaimVerdicts(ctx, tx, e.o.Consumer, markers, e.o.VersionGuard)
	if err != nil {
		return res, err
	}
	verdict := make(map[string]dedup.Verdict, len(markers))
	for i, v := range verdicts {
		if _, ok := verdict[markers[i].EventID]; !ok {
			verdict[markers[i].EventID] = v
		}
	}
	todo := make([]*item, 0, len(markers))
	for _, it := range items {
		switch v := verdict[it.Event.ID]; {
		case it.dup || v == dedup.Duplicate:
			res.duplicates++
			continue
		case v == dedup.Stale: // the version guard's: marked stale by the claim
			res.stale++
			continue
		}
		todo = append(todo, it)
	}
	sp := &savepoints{tx: tx, combine: st.Driver() == "postgres"}
	itx := inboxlink.NewTx(tx).(*inbox.Tx)
	if bh := e.batchHandler(); batch && bh != nil {
		err = e.applyBatch(ctx, tx, itx, sp, bh, todo, &res)
	} else {
		for _, it := range todo {
			if err = sp.next(ctx); err != nil {
				break
			}
			if err = e.handleCounted(ctx, tx, itx, sp, it, nil, &res); err != nil {
				break
			}
		}
	}
	if err != nil {
		return res, err
	}
	return res, e.finishUnit(ctx, tx, res)
}

// finishUnit records the stale events' outcome on their markers and commits tx.
func (e *Runner) finishUnit(ctx context.Context, tx *dedup.Tx, res unitResult) error {
	// The stale events' markers say so, for the status of the dead letters they were replayed
	// from (stale, not resolved: docs/design.md §3.2).
	if err := e.o.Store.SetOutcome(ctx, tx, e.o.Consumer, res.staleIDs, dedup.OutcomeStale); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// errNotAllFresh: the claim's statement with a handler's part found events claimed before
// (or the part refused the batch) and wrote nothing: claim first, then apply the fresh events.
var errNotAllFresh = errors.New("events of the batch were claimed before")

// claimingHandler is the handler's ClaimingBatchHandler when the runner may use it: on
// PostgreSQL, through the batch path, without the version guard.
func (e *Runner) claimingHandler() ClaimingBatchHandler {
	cb, ok := e.batchHandler().(ClaimingBatchHandler)
	if !ok || e.o.VersionGuard || e.o.Store.Driver() != "postgres" {
		return nil
	}
	return cb
}

// claimedBatch is the handler's part of the claim's statement for the batch's events (the
// items that are not repeats), when claiming and the runner may use one (claimingHandler).
func (e *Runner) claimedBatch(items []*item, claiming bool) (part ClaimedBatch, ok bool) {
	cb := e.claimingHandler()
	if !claiming || cb == nil {
		return part, false
	}
	defer func() {
		if p := recover(); p != nil { // HandleBatch, called next, meets the same event
			part, ok = ClaimedBatch{}, false
		}
	}()
	ms := make([]*Message, 0, len(items))
	for _, it := range items {
		if !it.dup {
			it.Attempt = 1
			ms = append(ms, &it.Message)
		}
	}
	part, ok = cb.ClaimedBatch(ms)
	return part, ok
}

// applyClaimed claims markers and applies the batch's fresh events with part in one statement,
// a transaction of its own: the markers and the effects commit together, or neither. When an
// event was claimed before, or part's Fallback refused the batch, the statement writes nothing
// and applyClaimed returns errNotAllFresh. A failure of the statement is returned as a failure
// of HandleBatch as a whole: an *infraError or a *batchFallback.
func (e *Runner) applyClaimed(ctx context.Context, items []*item, markers []dedup.Marker, part ClaimedBatch) (res unitResult, err error) {
	err = e.o.Store.ClaimWith(ctx, nil, e.o.Consumer, markers, dedup.ClaimedPart{
		With: part.With, Select: part.Select, Fallback: part.Fallback, Args: part.Args, Row: part.Row,
	})
	switch {
	case errors.Is(err, dedup.ErrClaimFallback):
		return res, errNotAllFresh
	case err != nil && classify(err) == classInfra:
		e.m.handlerErrors.WithLabelValues(classInfra.label()).Inc()
		return res, &infraError{err}
	case err != nil:
		return res, &batchFallback{err}
	}
	// Committed, every fresh event Applied (part's Fallback refuses the others).
	if part.Committed != nil {
		part.Committed()
	}
	res.processed = len(markers)
	res.duplicates = len(items) - len(markers)
	return res, nil
}

// applyBatch applies todo through HandleBatch. An event that HandleBatch reports failed
// (having written nothing) goes through handleOne with that failure as its first attempt,
// under a savepoint set after the events before it; HandleBatch then goes on with the events
// after it. A failure of HandleBatch as a whole is returned as an *infraError or a
// *batchFallback; the caller rolls the transaction back.
func (e *Runner) applyBatch(ctx context.Context, tx *dedup.Tx, itx *inbox.Tx, sp *savepoints, bh BatchHandler, todo []*item, res *unitResult) error {
	for len(todo) > 0 {
		r, err := e.callBatch(ctx, itx, bh, todo)
		if err == nil && (len(r.Outcomes) > len(todo) || (len(r.Outcomes) == len(todo)) != (r.Err == nil)) {
			err = fmt.Errorf("handler %s: HandleBatch of %d events returned %d outcomes and error %v", e.o.Name, len(todo), len(r.Outcomes), r.Err)
		}
		if err != nil {
			if classify(err) == classInfra {
				e.m.handlerErrors.WithLabelValues(classInfra.label()).Inc()
				return &infraError{err}
			}
			return &batchFallback{err}
		}
		for i, out := range r.Outcomes {
			if out == Stale {
				res.stale++
				res.staleIDs = append(res.staleIDs, todo[i].Event.ID)
			} else {
				res.processed++
			}
		}
		if len(r.Outcomes) > 0 {
			sp.keep()
		}
		todo = todo[len(r.Outcomes):]
		if r.Err == nil {
			return nil
		}
		if err := sp.next(ctx); err != nil {
			return err
		}
		if err := e.handleCounted(ctx, tx, itx, sp, todo[0], r.Err, res); err != nil {
			return err
		}
		todo = todo[1:]
	}
	return nil
}

// handleCounted is handleOne with its result added to res.
func (e *Runner) handleCounted(ctx context.Context, tx *dedup.Tx, itx *inbox.Tx, sp *savepoints, it *item, first error, res *unitResult) error {
	out, dl, retried, err := e.handleOne(ctx, tx, itx, sp, it, first)
	res.retried += retried
	if err != nil {
		return err
	}
	switch {
	case dl != nil && dl.release:
		res.released = append(res.released, *dl)
	case dl != nil:
		res.deadLetters = append(res.deadLetters, *dl)
	case out == Stale:
		res.stale++
		res.staleIDs = append(res.staleIDs, it.Event.ID)
	default:
		res.processed++
	}
	return nil
}

// handleOne applies one fresh event under the savepoint sp has just set, through the
// handler chain (middleware.go): the built-in steps retry retryable failures in place and
// settle the others as dead letters through the event's eventRun. A non-nil first is the
// failure of the event's first attempt, made already (by HandleBatch, which wrote nothing
// for it). It returns a dead letter when the event failed for good (its effects rolled back
// and its marker removed, inside tx), the retries made, or an error when the transaction
// must be abandoned: an infrastructure failure, a failure no step of the chain settled
// (*noDeadLetterError, retried as infrastructure is), or one of the transaction itself.
func (e *Runner) handleOne(ctx context.Context, tx *dedup.Tx, itx *inbox.Tx, sp *savepoints, it *item, first error) (Outcome, *deadLetter, int, error) {
	r := &eventRun{e: e, tx: tx, sp: sp, msg: &it.Message, first: first}
	it.ev, it.Attempt = r, 1
	out, err := e.chain.Handle(ctx, itx, &it.Message)
	it.ev = nil
	retried := it.Attempt - 1
	switch {
	case r.broken != nil:
		return 0, nil, retried, r.broken
	case err == nil && r.dl != nil:
		return 0, r.dl, retried, nil
	case err == nil:
		sp.keep()
		return out, nil, retried, nil
	case ctx.Err() != nil:
		return 0, nil, retried, ctx.Err()
	case classify(err) == classInfra:
		return 0, nil, retried, &infraError{err}
	}
	return 0, nil, retried, &noDeadLetterError{err}
}

// savepoints keeps one savepoint, fw_event, just before the event being handled. Between
// two events the previous savepoint is released (keeping what the event did) and a new one
// set; on PostgreSQL both go in one round trip. After the last event no RELEASE is sent:
// COMMIT releases it.
type savepoints struct {
	tx      *dedup.Tx
	combine bool // send RELEASE and SAVEPOINT as one simple-protocol query
	set     bool // a savepoint exists
	dirty   bool // work since the savepoint must be kept
}

// next sets a savepoint covering exactly what comes next.
func (s *savepoints) next(ctx context.Context) error {
	switch {
	case !s.set:
		if err := s.tx.Savepoint(ctx, savepoint); err != nil {
			return err
		}
		s.set = true
	case s.dirty && s.combine:
		if _, err := s.tx.Exec(ctx, `RELEASE SAVEPOINT "`+savepoint+`"; SAVEPOINT "`+savepoint+`"`); err != nil {
			return fmt.Errorf("RELEASE and SAVEPOINT %s: %w", savepoint, err)
		}
	case s.dirty:
		if err := s.tx.Release(ctx, savepoint); err != nil {
			return err
		}
		if err := s.tx.Savepoint(ctx, savepoint); err != nil {
			return err
		}
	}
	s.dirty = false
	return nil
}

// keep records that what was done since the savepoint stays.
func (s *savepoints) keep() { s.dirty = true }

// rollback undoes everything since the savepoint, which stays set.
func (s *savepoints) rollback(ctx context.Context) error {
	s.dirty = false
	return s.tx.RollbackTo(ctx, savepoint)
}

// callBatch runs HandleBatch (as attempt 1 of each event), turning a panic into a failure of
// the batch.
func (e *Runner) callBatch(ctx context.Context, tx *inbox.Tx, bh BatchHandler, todo []*item) (res BatchResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = BatchResult{}, Permanent(fmt.Errorf("handler %s panicked in HandleBatch: %v", e.o.Name, p))
		}
	}()
	ms := make([]*Message, len(todo))
	for i, it := range todo {
		it.Attempt = 1
		ms[i] = &it.Message
	}
	return bh.HandleBatch(ctx, tx, ms)
}

// txAhead is a transaction begun while its batch is decoded: on PostgreSQL, BEGIN's round
// trip then overlaps the decoding instead of adding to the batch's time in the database. The
// batch's first transaction takes it; one not taken (nothing to claim, or the batch failed
// before) is rolled back. A nil *txAhead begins when asked, as Store.Begin does.
type txAhead struct {
	began chan beganTx
	taken bool
}

type beganTx struct {
	tx  *dedup.Tx
	err error
}

// beginAhead begins the batch's transaction in the background: on PostgreSQL, and when the
// batch is one transaction. Not on SQLite, whose BEGIN takes the database's write lock, which
// the decoding would then hold.
func (e *Runner) beginAhead(ctx context.Context) *txAhead {
	if e.o.TxPerEvent || e.o.Store.Driver() != "postgres" || e.claimingHandler() != nil {
		return nil
	}
	a := &txAhead{began: make(chan beganTx, 1)}
	go func() {
		tx, err := e.o.Store.Begin(ctx)
		a.began <- beganTx{tx, err}
	}()
	return a
}

// begin returns the transaction begun ahead the first time (or the error beginning it), and
// a new transaction after.
func (a *txAhead) begin(ctx context.Context, st *dedup.Store) (*dedup.Tx, error) {
	if a == nil || a.taken {
		return st.Begin(ctx)
	}
	a.taken = true
	b := <-a.began
	return b.tx, b.err
}

// release rolls back the transaction begun ahead when nothing took it.
func (a *txAhead) release(ctx context.Context) {
	if a == nil || a.taken {
		return
	}
	a.taken = true
	if b := <-a.began; b.err == nil {
		_ = b.tx.Rollback(context.WithoutCancel(ctx))
	}
}
