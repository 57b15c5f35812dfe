// Package consumer is fieldwork's consumer runner, for a team's own Go service and for
// `fieldwork consume` alike: a Kafka consumer group member (franz-go) that applies each
// event through the team's Handler with a processed-event marker written in the same
// database transaction as the handler's own writes (package inbox), retries with backoff,
// dead letters in fieldwork's convention (so that `fieldwork dlq`, `replay` and `processed`
// read what it writes), a breaker, metrics, graceful shutdown and partition revocation done
// right. With the option ShareGroup it is a share group member instead (KIP-932), each record
// acknowledged only after its batch commits (docs/design.md §3.8). The bundled handlers of
// `fieldwork consume` (projection, audit, webhook) run on it as any team's handler does
// (docs/design.md §1 and §3.5).
//
// # Using it
//
//	store, err := inbox.Open(ctx, "postgres://…")          // the markers: fieldwork.processed_events
//	…
//	h := consumer.HandlerFunc(func(ctx context.Context, tx *inbox.Tx, m *consumer.Message) (consumer.Outcome, error) {
//		_, err := tx.Exec(ctx, `INSERT INTO orders …`, m.Event.AggregateID, …) // through tx only
//		return consumer.Applied, err
//	})
//	if err := consumer.Migrate(ctx, store, h); err != nil { … } // markers (and a Migrator's tables)
//	r, err := consumer.New(store, h,
//		consumer.Topics("orders"), consumer.Group("order-projection"),
//		consumer.Kafka(kgo.SeedBrokers("localhost:9092")))
//	…
//	err = r.Run(ctx) // until ctx is cancelled (then drains), or a fatal error
//
// # What the runner guarantees
//
//   - Each event is applied at most once per consumer name (the option Consumer, default
//     the group), however often Kafka delivers it: the runner claims the batch's event ids in
//     the marker table inside the transaction the handler writes in, so the marker and the
//     handler's effects commit together or not at all. A redelivery after a crash, a
//     rebalance or a replay finds the marker and is counted as a duplicate.
//   - Nothing is lost: a Kafka offset is committed only after its batch's transaction has
//     committed and its dead letters are acknowledged. A crash anywhere leaves a state the
//     next run repairs (see "One batch").
//   - A partition never stalls on a bad event: what cannot be decoded, and what the handler
//     rejects, is dead-lettered with enough metadata to replay (fw.dlq.* headers: reason,
//     error, attempts, coordinates, group, event id) and its marker removed, so that a replay
//     after the fix is handled. Infrastructure failures (the database, the schema registry,
//     the brokers) are retried, never dead-lettered.
//   - Within a partition events are handled in offset order, one batch at a time; partitions
//     run concurrently.
//   - When records keep failing, the dead-letter breaker stops the runner instead of
//     dead-lettering a whole topic (the option Breaker).
//
// # What the handler must do
//
//   - Write only through the *inbox.Tx it is given, never through another connection, and
//     only to the database of the inbox.Store the runner was given (the same database as
//     the markers; inbox.Store.Table names a table beside them): a write elsewhere does not
//     roll back with the event, and is repeated when the event is handled again.
//   - Give every side effect outside the database (an HTTP call, an email) an idempotency key
//     from IdempotencyKey(consumer, event id): the runner may call the handler again for an
//     event after a crash, a rebalance or a retry.
//   - Say what happened with its error (see Handler): nil, Permanent, Unsupported, Retryable,
//     or a database error as it came (inbox.IsTransient errors are infrastructure; never
//     wrap one in Permanent or Retryable).
//   - Keep neither tx nor the message after returning, and not use tx concurrently.
//
// A handler may also name itself (Namer), create its tables (Migrator, run by Migrate), tell
// at start whether they exist (Checker), and apply a whole batch in a few statements
// (BatchHandler).
//
// # The handler chain
//
// Every fresh event goes through the middleware (Middleware; the option Chain replaces the
// default, DefaultMiddleware), outermost first: DeadLetter, Retry, Metrics, Recover. Recover
// is innermost so that a panic becomes a Permanent error every step above sees; Metrics
// counts and times each attempt; Retry rolls a failed attempt back to the event's
// savepoint and calls again after a backoff, up to MaxAttempts; DeadLetter, outermost,
// settles whatever the steps inside give up on as a dead letter. A team adds its own steps
// (Timeout around each attempt, between Retry and Metrics; Trace outermost to span the
// whole event; or a step of its own, which sees Event, Record and Attempt) and removes
// built-ins: without DeadLetter a failure leaves the chain, and the batch is retried as an
// infrastructure failure is, with a log line that says the chain has no dead-letter step.
//
// # Options
//
// Topics and Group are required. Kafka gives the client's connection (seeds, TLS, SASL).
// Consumer and Name name the markers and the handler; DeadLetterTopic the dead letters'
// topic. MaxAttempts and RetryBackoff shape Retry; InfraBackoff and MaxInfraRetries the
// retries of infrastructure failures; BatchMax the batches; Breaker and NoBreaker the
// dead-letter breaker; VersionGuard keeps older versions of an aggregate from the handler
// (the claim marks them stale); StopWhenIdle, ShutdownTimeout, InstanceID and SessionTimeout
// the member's life in the group; Logger and Registerer where logs and metrics go; Chain the
// handler chain. Each option's documentation gives its default.
//
// # One batch
//
// Each assigned partition has its own goroutine; partitions run concurrently and one
// partition is strictly ordered. For each batch of at most BatchMax records of a partition:
//
//  1. decode every record (envelope.DecodeRecord); a malformed one becomes a dead letter
//     (reason malformed);
//  2. dedupe the batch by event id in memory (the first occurrence wins, later ones count
//     as duplicates);
//  3. BEGIN; claim all the batch's event ids in one statement (dedup.Store.Claim), which
//     returns the fresh ones;
//  4. apply the fresh events in offset order: with a BatchHandler, HandleBatch applies them
//     all in a few statements (see "Batch handlers"); otherwise, for each: SAVEPOINT; the
//     handler chain (Handle); RELEASE. A handler failure rolls back to the savepoint (see
//     below). fieldwork's benchmark turns the batch path off, or runs one transaction per
//     event, through internal/consumerlink. On PostgreSQL the RELEASE of one event and
//     the SAVEPOINT of the next travel in one round trip, and the last RELEASE is left to
//     COMMIT;
//  5. COMMIT: the markers and the handler's effects become durable together;
//  6. produce the dead letters (docs/design.md §3.2, via dlq.NewDeadLetter) to <topic>.dlq or
//     DeadLetterTopic, and wait for every acknowledgement (see "Dead letters that do not fit");
//  7. only then commit the Kafka offset after the batch's last record. The partition's
//     committer goroutine sends the commit while the worker goes on with the next batch, one
//     commit at a time (a later offset never overtaken by an earlier one), and a failed one is
//     tried again a second later or with the next batch's; a worker that stops commits what it
//     finished before it exits.
//
// The runner reads committed records only (aborted transactions' events never happened) and
// asks for transaction markers too: decode skips them, and the offset committed after a
// batch that ends in one passes it, so a partition whose log ends in a marker is seen to be
// done.
//
// A crash anywhere leaves a state the next run repairs: before 5 nothing happened; between
// 5 and 7 the records are read again, their markers make them duplicates, and the
// dead-lettered events (which have no marker) are dead-lettered again. Dead letters are
// therefore at least once, like the events themselves.
//
// # Marker and savepoint: the choice
//
// docs/design.md §3.4 claims a batch with one statement, before the handler runs; the savepoint
// of each event is taken after it, so rolling back to the savepoint does not remove the
// event's marker. A failed event must not stay marked (a dead-lettered event has no marker,
// so that a replay after a fix is handled). So when an event fails for good the runner,
// inside the same transaction: rolls back to the event's savepoint (undoing whatever the
// handler wrote), deletes the event's marker (dedup.Store.Unclaim), and releases the
// savepoint. The deletion commits with the batch. The alternative — one claim per event
// under its savepoint — would make the rollback remove the marker by itself but costs a
// statement per event; the batch claim plus an Unclaim only on the rare failure keeps the
// common path at one claim statement per batch.
//
// # Batch handlers
//
// With one savepoint and one statement per event, a batch costs several round trips per
// event; HandleBatch costs a few per batch. Its contract (BatchHandler) keeps the failure
// path of the savepoints: HandleBatch reports the outcomes of a prefix of the events, and the
// event after the prefix, which failed having written nothing, goes through the per-event
// path under a savepoint set right then, with its failure as its first attempt (retried with
// Handle, or dead-lettered and unclaimed); HandleBatch then goes on with the events after it.
// A failure of HandleBatch as a whole (a statement failed, and on PostgreSQL the transaction
// is aborted) is either infrastructure — the batch is rolled back and retried as any — or
// not: the batch is rolled back and applied again at once, claim included, event by event
// under savepoints, so that a poison event that only the database refuses is found and
// dead-lettered alone (Stats.BatchFallbacks, fieldwork_consume_batch_fallbacks_total). The
// per-event run is not retried as a batch. Bisecting would find the poison event in fewer
// statements, but poison is rare, and the per-event path is the one whose guarantees the
// crash and restart tests establish.
//
// A ClaimingBatchHandler (the bundled projection and audit) goes one step further on
// PostgreSQL: its writes are common table expressions of the claim's own statement, and that
// one statement is the batch's whole transaction — steps 3 to 5 in one round trip, no BEGIN,
// no COMMIT. The markers and the effects still commit together or not at all. The statement
// keeps its work only when it claimed every event of the batch and the handler's Fallback
// query finds nothing to refuse (the projection refuses a stale event, whose marker must say
// so); otherwise it fails by design, having written nothing (a marker claimed before fails
// the markers' insert, which has no ON CONFLICT), and the runner applies the batch as above,
// claim first, in a transaction. A redelivered batch costs one statement more.
//
// # Failures
//
//   - Handler errors (see Handler), through the default chain: Retryable ones are retried in
//     place by Retry — rolled back to the savepoint and tried again after RetryBackoff — up
//     to MaxAttempts attempts, then DeadLetter dead-letters the event as exhausted; Permanent
//     ones are dead-lettered at once as rejected, Unsupported ones as unsupported; unmarked
//     errors are retryable unless inbox.IsTransient says infrastructure. A panic is a
//     permanent failure (Recover).
//   - Infrastructure errors (the database unreachable or restarting, a broken connection, a
//     serialization failure or deadlock — dedup.IsTransient — and any other error of the
//     runner's own statements) roll back the whole transaction and retry the batch with
//     InfraBackoff (capped exponential, jittered: the one backoff of every retry, from
//     cenkalti/backoff/v5), forever or up to MaxInfraRetries, after which Run fails. They are never dead-lettered. A store that is not migrated stops the
//     engine at once.
//   - Producing dead letters is retried the same way after infrastructure errors (a broker
//     unavailable, a timeout, a leader moving); anything else is the record's or the topic's
//     problem, see below. A failed offset commit is logged and left to the next commit; a
//     partition with nothing more to do commits it again every second.
//
// # Dead letters that do not fit
//
// A dead letter is the original record plus its fw.dlq.* headers, so a poison record close
// to the source topic's size limit makes a dead letter over it. The dead letters are
// produced with a batch limit per dead-letter topic, read at start: the topic's own
// max.message.bytes when it sets one, else the message.max.bytes of the brokers holding it
// (kadm DescribeTopicConfigs, DescribeBrokerConfigs), else the topic's effective value as
// described; when nothing can be read (no DescribeConfigs permission), 1,000,012 bytes,
// franz-go's default and a little under Kafka's, and the log says why. A dead letter
// that still cannot be written goes out as a bounded copy, smaller step by step:
//
//  1. the whole dead letter, unless it is larger than its topic's limit;
//  2. a copy whose value is the original value's longest prefix that fits, when the whole
//     one is too large or was refused for good (MESSAGE_TOO_LARGE, a policy, …);
//  3. a copy without the value.
//
// A copy keeps the key, the original headers and every fw.dlq.* header (coordinates, group,
// event id, reason, error), and adds two (internal/dlq names them): fw.dlq.value_omitted,
// why the value is not whole (the size and the limit, or the producer's error), and
// fw.dlq.value_bytes, the original value's length. Its value is then the original's first
// bytes, possibly none: the full value is still in the source topic at the coordinates, as
// long as retention keeps it. Only infrastructure errors are retried; the next step is taken
// at once. Stats.DeadLettersBounded and fieldwork_consume_dead_letters_bounded_total count
// the copies.
//
// When even the copy without a value is refused for a reason retrying cannot cure — the
// dead-letter topic was deleted (UNKNOWN_TOPIC_OR_PARTITION, confirmed by a metadata
// request), the consumer may not write to it (TOPIC_AUTHORIZATION_FAILED), the broker refuses
// the record itself — the record can be neither handled nor set aside, and the runner stops
// that partition there: it commits the offsets before the record (everything before it is
// done) and not the record's, pauses the partition, logs an error naming the record, and
// keeps the other partitions going. Run returns a *HaltedError per stopped partition when
// it stops (a signal, or StopWhenIdle once every other partition is at its end), so the
// process exits non-zero; fieldwork_consume_halted_partitions counts them meanwhile. The
// alternatives were worse: skipping the record loses a poison event without a trace, and
// retrying forever keeps the member busy on a problem only an operator can fix (create the
// topic, grant the ACL, raise max.message.bytes), hides it behind retry logs, and under
// StopWhenIdle never ends. A stopped partition costs nothing but its lag: once the
// dead-letter topic is fixed, the next run (or the next owner after a rebalance) reads the
// record again and writes its dead letter. A member that takes such a partition over stops
// at the same record, for the same reason.
//
// # The dead-letter breaker
//
// The option Breaker (docs/design.md §3.5) stops the runner when records keep failing, rather
// than dead-letter a whole topic: more than Consecutive failed records in a row (one
// partition's, in offset order, or the consumer's, with no record handled in between), or
// more than Ratio × Window failed among the consumer's last Window records. One breaker
// serves every partition (breaker.go); batches are counted in the order they finish, each in
// offset order. It judges a batch after its transaction commits and before its dead letters
// are produced, so it trips at an exact record even inside a batch: the dead letters from that
// record on are not produced and the partition's offset is committed up to the record
// (runBatch's cut, as for a halt). Then no worker takes another batch, the batches in flight
// are cut at their first failure, the poll loop stops as for a signal (Runner.softStop), the
// engine drains, commits, leaves the group, and Run returns the *TrippedError
// (fwerr.KindTripped, exit 8) naming the dominant failure of the window (reason and
// dlq.FingerprintOf, counted). The events handled after the cut in the same batch are
// committed in the store with their markers: read again they are duplicates; the failed ones
// were unclaimed, so a run after the fix handles them. NoBreaker restores dead-lettering
// without limit.
//
// # Rebalances and shutdown
//
// The group uses manual commits (DisableAutoCommit) with BlockRebalanceOnPoll, as in
// franz-go's goroutine-per-partition manual-commit example: a rebalance callback never runs
// while the poll loop is handing out records, and once OnPartitionsRevoked returns no
// record of a revoked partition is handed out. The poll loop calls AllowRebalance right
// after handing records out, so it never holds a rebalance up (the revoke callback below
// waits only for the revoked partitions' batches in flight). The loop polls while some
// partition it fetches has less than a batch queued (franz-go fetches again only once its
// buffered records are taken). A slow or failing partition never holds the others up: the
// poll loop takes everything franz-go has buffered at once, so that every partition gets
// its first records together, and pauses fetching a partition (PauseFetchPartitions) whose
// queue holds 8 batches, resuming it at 4: the worker that takes the queue down to 4 cuts
// the poll in flight short, and fetches long-poll at most 100 ms, so that a partition
// resumed beside partitions with nothing new is fetched at once (pause.go,
// TestPausedPartitionResumesBesideAnIdleOne); franz-go keeps pauses across
// rebalances, so partitions are resumed when revoked, lost or assigned. Measured: the last
// of 4 partitions started after 1 to 19 events of the others, against 686 to 2,600 when
// the poll was bounded by a record count and the loop waited on the fullest queue
// (TestPartitionsStartTogether).
//
// Records that the broker deletes before the consumer reads them (retention by record
// time, DeleteRecords) are skipped: franz-go reports OFFSET_OUT_OF_RANGE, logged as a
// warning, and resumes at the log start (ConsumeResetOffset is the earliest offset).
//
// On revoke, the revoked partitions' workers finish the batch in flight (each commits its
// own offsets), bounded by ShutdownTimeout (at most 30s, inside Kafka's rebalance timeout);
// past it the batch is abandoned: rolled back and not committed. Then any finished offset
// whose commit had failed is committed, so the next owner starts right after the last
// finished batch. On a lost partition (the member was fenced) the batch is abandoned at
// once, since its commit would be refused. Either way nothing is double-applied: whatever
// the next owner reads again is a duplicate by its marker.
//
// When Run's context is cancelled (SIGINT or SIGTERM in `fieldwork consume`) the runner
// stops polling, lets every batch in flight finish within ShutdownTimeout (past it they are
// abandoned and Run returns ErrDrainTimeout), commits, and leaves the group. Abort (a second
// signal) abandons the batches in flight and returns ErrAborted at once; that is as safe as
// a crash.
//
// StopWhenIdle stops the runner once it holds an assignment, no record has arrived for that
// long since the assignment last changed, nothing is queued or in flight, and the broker
// confirms that the group's committed offset of every partition of the source topics — not
// only the assigned ones — has reached its last stable offset (see idleCheck): a quiet
// client alone proves nothing, and a member that lost its partitions while a broker was away
// holds none and receives nothing. What it knew is reset whenever partitions are assigned,
// revoked or lost. It never gives up waiting: a partition that does not reach its end keeps
// the runner running, logged every minute, rather than exiting 0 with lag. A member that
// holds no partition (a group with more members than partitions) waits too, until the
// others leave and it is given partitions, or a signal stops it.
//
// # Deliberately not done
//
// The runner creates no topic (a missing dead-letter topic stops it at start) and no table
// unless asked (Migrate; a Migrator's Migrate runs only then, `fieldwork consume --migrate`);
// Checker reports a missing table at start instead of dead-lettering every event. A new group starts at the earliest
// offset. Dead letters of one batch are produced together and may interleave with other
// partitions' dead letters in the dead-letter topic.
package consumer
