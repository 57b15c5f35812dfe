// Package dlq reads and writes dead-letter records (DESIGN.md 3.2).
//
// Writing: NewDeadLetter turns a record that could not be handled into fieldwork's dead
// letter: the original key, value and headers byte for byte, plus fw.dlq.* headers.
//
// Reading: Parse normalises a dead letter of any convention an operator meets (fieldwork,
// Spring Kafka, Kafka Connect, Watermill, SmallRye) into one DeadLetter. Parse never fails:
// a header it cannot read is listed in DeadLetter.HeaderProblems and the rest is still read;
// a record of no known convention is kept with its raw headers.
//
// Replaying: IsDeadLetterHeader and StripDeadLetterHeaders say which headers go when a record
// returns to its source topic, and DeadLetter.Source says where that is.
//
// Listing and summarising: Filter selects dead letters and Stats aggregates them while
// streaming, in memory bounded by the number of groups.
//
// Scanning: Topics finds the dead-letter topics, PlanScan fixes their end offsets, and
// Scan.Run streams Parse results through a Filter. List adds statuses (StatusLookup, from the
// dedup store's markers) and a limit; Summarise aggregates per topic and per group, with each
// topic's retention; Fetch and FindEventID find one dead letter and NewDetail decodes it for
// `dlq show`. These read Kafka through internal/kafka and the store through internal/dedup;
// everything else works on franz-go records and returns data. Nothing here renders.
package dlq
