// Package replay plans and executes replays of records (dead letters, or any records with a
// target topic) back into Kafka, and keeps the replay journal (docs/design.md §3.3).
//
// # Flow
//
//	plan, err := replay.NewPlan(ctx, cluster, spec)            // end offsets fixed now
//	rep, err := replay.Scan(ctx, cluster, store, plan, opts)   // a dry run: nothing is sent
//	err = rep.Err()                                            // unroutable records, missing targets
//	sum, err := replay.Execute(ctx, cluster, store, plan, eo)  // send, journal, checkpoint
//	eo.SinglePass = true                                        // --yes: no scan (below)
//	plan, err = replay.LoadRun(ctx, cluster, store, id, force) // continue an interrupted run
//
// Flow is that flow as an action (internal/action), once, for every caller (`fieldwork
// replay`, `replay resume`, triage, the demo), run by action.Run: plan → check → confirm →
// execute, with the single pass under --yes, "nothing selected, no run recorded", the loop
// guard's exit 3 and the resume hint of an interrupted run. It asks through the action's
// Confirm hook, reports progress through its Progress hook (Of a FlowProgress), is journaled
// under the action's Record and returns its warnings as data (FlowResult.Notices): it never
// prints.
//
// Workers. CreateWorkerRun records a scanned plan as a run shared by workers, sending nothing;
// RunWorker, in any number of processes, joins the run's consumer group (GroupName) and
// continues the partitions the group assigns it as LoadRun would, one Execute-like session per
// assignment whose journal writes are the partitions' (dedup.ReplayProgress.Partitioned). The
// group assigns and hands over (eager rebalances, the session drained and journaled in
// OnPartitionsRevoked); the journal alone records progress.
//
// Execute reads the ranges again rather than keeping the scan's records: the ranges are
// fixed, so the second read sees the same records, and memory stays bounded however large
// the replay.
//
// Single pass. With --yes nothing is asked, so no count is needed beforehand, and a plan is
// executed in one pass (ExecOptions.SinglePass): each record is read once and sent as it is
// read. A replay of a whole dead-letter topic otherwise reads it twice, and the second read
// cost as much as the send. What a scan guaranteed is kept record by record: a --to topic
// (Plan.TargetKnown) is checked before the first read; a target named by a record's headers is
// checked when a record first names it (one metadata request per topic), and with
// --to-partition original its partition too; a record that cannot be routed, or whose target
// does not exist, stops the run before it is sent. When it is the first record to send,
// nothing was sent and no run is recorded, exactly as after a scan. Otherwise the records
// before it were sent and are journaled, the run is marked failed and resumes once the target
// exists (*MissingTargetError.Stopped). A run is recorded when its first record to send is
// read, so a plan that selects nothing records no run. Malformed dead letters are warned
// about after the run, not before. A dry run, and the confirmation on a terminal, scan the
// whole range first and list every record that cannot be sent.
//
// # Decisions
//
// Bounded. The plan takes each partition's last stable offset when it is made (kafka.Plan);
// a resumed run reads up to the end offsets journaled with the run, never re-taken. Records
// that arrive while a replay runs, its own output among them, are never read.
//
// Routing. Without --to each record goes to the original topic its dead-letter headers name,
// in any convention dlq.Parse reads (dlq.DeadLetter.Source). A record that names none needs
// --to; one whose original topic is the topic being read is refused, like --to naming it.
// Partitions (docs/design.md §3.3): a record goes where its key's other records are. With
// PartitionAuto, the default, a dead letter naming its original partition goes back to it
// when the target has as many partitions as the topic it came from; otherwise a keyed record
// goes where Spec.Partitioner (kafka.Partitioner: murmur2, crc32, fnv1a) puts its key, and a
// record without a key it hashes is spread. PartitionOriginal always keeps the original
// partition (for a record that is not a dead letter, the partition it is read from),
// PartitionKey always places by the key. targetCache.place decides it once per record, for
// the plan (counted per target partition and rule) and for the send alike: the producer's
// partitioner only sends a record to the partition set on it, or spreads it. The scan checks,
// before anything is sent, that every target topic (and with --to-partition original every
// target partition) exists; a single pass checks each record's before it is sent (above).
//
// Records. Key and value as they were; headers as they were minus the dead-letter headers of
// every convention (also with --to: what is sent is the original record again) and minus
// earlier fw.replay.* headers, plus fw.replay.id, .source, .count (previous + 1), .at and
// .reason. The timestamp is the replay's (a new delivery; an old timestamp would expire early
// in a time-retained topic).
//
// Record size. The producer batches up to each target topic's own record size limit
// (kafka.RecordLimits: its max.message.bytes, else the brokers' message.max.bytes, the rule
// the consumer sizes its dead letters by), not franz-go's default of 1,000,012 bytes, so that
// a 1 MiB dead letter goes back into a topic that accepts 8 MiB. The --to topic's limit is
// read before anything is read, a target named by dead-letter headers when the first record
// to it is (where its existence is checked); a limit that cannot be read is the default, and
// an error names where it came from. The producer compares a record's uncompressed size: a
// record larger than its target's limit fails the run (resumable), with an error naming the
// record, its size and the limit, even one that compression would have shrunk under it.
//
// Loop guard. A record whose fw.replay.count has reached MaxReplays is quarantined: counted,
// listed, not sent; Summary.Err then reports a check failure (exit 3). A dry run reports the
// records it would quarantine and still exits 0: it replayed nothing, and the issue's
// contract is that a valid plan exits 0.
//
// Bounded copies. A dead letter the consumer could not write whole (larger than its
// dead-letter topic accepts, or refused) is a bounded copy: fw.dlq.value_omitted says why,
// fw.dlq.value_bytes the original length, and its value is the original's first bytes or
// none (dlq.DeadLetter.ValueOmitted). A replay strips dead-letter headers, so sending it would
// deliver the cut value as the event: it is never sent. It is incomplete (OutcomeIncomplete,
// before the loop guard: no --max-replays makes it whole): counted (Report.Counts.Incomplete,
// Summary.IncompleteCount), listed like quarantined records, and an executed run that met one
// exits 3 (Summary.Err), as for quarantine, once it has sent the rest. A dry run reports them
// and exits 0. The journal keeps no count of its own: they are the selected records neither
// sent, quarantined nor skipped. The original record, whole, is only where it came from.
//
// Journal and checkpoints. Execute records the run (operator, reason, the Spec as JSON, source
// and its Kafka topic ID, target, status, owner host:pid) before sending. Acknowledgements arrive out of source order,
// so each source partition's checkpoint is the contiguous prefix of records that are done
// (acknowledged, or needing no send); counts are committed with that prefix, so after a crash
// they describe exactly the records behind the checkpoints. Every acknowledged send is
// journaled (source and target position, the source record's event id and timestamp) in batches, in one transaction with the
// checkpoints and counts, every DefaultFlushRecords sends or DefaultFlushInterval. A resume
// reads each partition from just after its checkpoint and does not send again the records the
// journal shows acknowledged beyond it; what a SIGKILL can duplicate is what was handed to the
// producer without reaching the journal, which reading keeps under Summary.DuplicateWindow
// (the producer's buffer plus one journal batch). SIGINT/SIGTERM instead stop reading, await
// the records in flight, journal them and mark the run interrupted: nothing is duplicated.
//
// Record identity. Offsets name records only while their topic lives: a topic deleted and
// recreated under its name (or a sandbox broker restarted over the same store) holds other
// records at the same offsets. The topic ID journaled with the run, and the event id and
// timestamp journaled with each send, let the journal tell the records it sent from the ones
// at their coordinates now (the status rule of package dlq asks it so). A plan executed after
// its source topic was recreated, and a resume of a run whose source topic was recreated, are
// refused with a *SourceRecreatedError: its checkpoints name records that no longer exist.
//
// Ownership. Only the owner process writes a run's progress (dedup.Store.SaveReplayProgress
// checks it). LoadRun refuses a run marked running while its process may be alive: on this
// host while its pid exists, from another host until its journal has been silent for
// StaleAfter; TakeReplayRun then swaps the owner atomically, so two resumers cannot both win.
//
// Rate. --rate is a token bucket (golang.org/x/time/rate) holding a 50ms burst: short
// enough that even a short replay holds the rate, long enough to make up for late wake-ups.
//
// Execution. How a run executes (its rate and batching, Execution) is journaled with its
// Spec, as the selection's "execution" object. A resume (the flow, FlowOptions.execution)
// uses it unless FlowOptions.RateGiven, and the run is taken with the execution it now has
// (TakeReplayRun), so that an explicit --rate is journaled for the next resume. Report and
// Summary say each setting and where it came from (ExecutionReport).
package replay
