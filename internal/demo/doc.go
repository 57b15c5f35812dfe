// Package demo is the story behind `fieldwork demo`: the whole life of a poison event and a
// handler bug in an at-least-once system, told in one process on the embedded defaults (the
// devstack broker on a free loopback port and an SQLite store in a directory of the
// caller's), with no Kafka, PostgreSQL or configuration needed.
//
// Every step calls the domain packages the commands call — consumer.Runner, dlq.List and
// dlq.Summarise, replay.NewPlan and replay.Flow (the one flow `fieldwork replay` runs: the
// executed replay takes the same single pass as the `--execute --yes` line it prints),
// dedup.Store.Stats — and announces the command line it stands for, so that a reader can run
// the same commands against the stack (`fieldwork demo --keep`) or their own cluster.
// Nothing shells out.
//
// # The story
//
//  1. The devstack seeds tasks with the sample stream (package sample): events of a few
//     dozen tasks, producer-retry duplicates, stale versions re-emitted later and poison
//     records. tasks.dlq starts empty (devstack.Options.NoDeadLetters): the dead letters
//     are the consumer's to write.
//  2. The reference consumer runs the projection handler as "release 1.4", which has a bug:
//     it rejects task.reopened for good (RejectedType). Duplicates are absorbed by their
//     markers, stale versions are no-ops, poison is dead-lettered as malformed, the
//     reopened events as rejected, and every partition reaches its end.
//  3. dlq list and dlq stats show the dead letters and their status (pending, or unknown
//     where no event id could be read).
//  4. A replay of tasks.dlq is planned (a dry run) with --dlq-reason rejected, "release
//     1.5" is deployed, and the replay is executed and journaled.
//  5. The fixed consumer handles the replayed events (applied, or no-ops where a newer
//     version of the task was already applied), and dlq list --status shows every replayed
//     dead letter resolved.
//  6. processed stats counts one marker per distinct valid event.
//
// # Decisions
//
// The malformed dead letters stay. Replaying a record sends the same bytes again; for a
// value that is not JSON, or an event with no id or a non-numeric version, that can only
// dead-letter it again. So the replay selects the rejected dead letters only, and the demo
// says that the malformed ones remain (pending, or unknown when they carry no id) and that
// their fix is the producer's. Nothing claims that everything is resolved when it is not.
//
// The bug is simulated by wrapping the bundled projection handler (rejecting), so the
// handler the fixed run uses is exactly `--handler projection`. The wrapper keeps the
// handler's name, as a real release would.
//
// A consume step stops once the group's committed offsets reach the end offsets taken when
// it started (or after StopWhenIdle with nothing arriving, as `--stop-when-idle` does,
// whichever comes first), and fails if it stopped short. Committed offsets are the
// consumer's own proof that every batch before them is done: markers and effects committed,
// dead letters acknowledged. Waiting for them, rather than only for idleness, keeps the demo
// deterministic and fast.
//
// The demo checks its own outcome at the end (Summary.Check): every replayed dead letter
// resolved, one marker per distinct valid event, every duplicate absorbed. A demo that says
// one thing and does another would be worse than none.
package demo
