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
// The package does no I/O: it works on franz-go records and returns data.
package dlq
