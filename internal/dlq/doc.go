// Package dlq reads and writes dead-letter records (docs/design.md §3.2).
//
// Writing: NewDeadLetter turns a record that could not be handled into fieldwork's dead
// letter: the original key, value and headers byte for byte, plus fw.dlq.* headers.
//
// Reading: Parse normalises a dead letter of any convention an operator meets (fieldwork,
// Spring Kafka, Kafka Connect and the others declared in convention_*.go, see conventions.go)
// into one DeadLetter. Parse never fails: a header it cannot read is listed in
// DeadLetter.HeaderProblems and the rest is still read; a record of no known convention is
// kept with its raw headers.
//
// Replaying: IsDeadLetterHeader and StripDeadLetterHeaders say which headers go when a record
// returns to its source topic, and DeadLetter.Source says where that is.
//
// Listing and summarising: Filter selects dead letters and Stats aggregates them while
// streaming, in memory bounded by the number of groups.
//
// Scanning: Topics finds the dead-letter topics, PlanScan fixes their end offsets, and
// Scan.Run streams Parse results through a Filter; Follow goes on from the scan's planned end
// with the dead letters that arrive after it. List adds statuses (StatusLookup, from the
// dedup store's markers) and a limit; Summarise aggregates per topic and per group, with each
// topic's retention; Fetch and FindEventID find one dead letter and NewDetail decodes it for
// `dlq show`. These read Kafka through internal/kafka and the store through internal/dedup;
// everything else works on franz-go records and returns data. Nothing here renders.
//
// Decisions where docs/design.md is silent:
//   - A list reads one partition at a time, topics and partitions in name and number order,
//     each in offset order, so that a limit keeps the same dead letters every time. A limit is
//     water-filled over topics, then partitions, in rounds (List); each partition is read
//     until one dead letter past its share is found, so "more remain" is never a guess.
//     Summaries read every partition at once: their order does not matter.
//   - A dead letter's status is for one consumer: --consumer, else the group the dead letter
//     names (fieldwork's consumer writes markers under its group name unless told
//     otherwise). A marker wins over a journaled replay: resolved, not replayed. No event id
//     (or one the store cannot hold) is unknown, never pending.
//   - "Oldest deletable" is the oldest dead letter's timestamp plus retention.ms: the earliest
//     time retention may delete it. Kafka deletes whole segments, so it may live longer;
//     retention.bytes may delete earlier and is not estimated.
//   - Scans fetch 512 KiB at a time (see read.go): memory stays flat whatever the topic.
package dlq
