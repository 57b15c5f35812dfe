// Package processed answers questions about the processed-event markers consumers write,
// against the topics the events came from:
//
//   - Check, the gap finder: which events of a Kafka range have no marker for a consumer.
//     It reads the range through kafka.Cluster.Plan and Read (end offsets fixed at the
//     start) and looks the event ids up in batches, so memory stays bounded however many
//     records the range holds: one batch of ids, the listed missing records, a few
//     malformed examples and the counts of at most 1,000 distinct malformed reasons. A range
//     of which no record, or more than a share (default half), could be read as an event is
//     unreadable: the check fails on it, naming the most common malformed reason.
//   - Prune, under the replay-horizon policy: markers older than a window are deleted only
//     when no source topic could still deliver their events, since an event replayed after
//     its marker is gone is processed a second time. Each source topic's retention is read
//     through kafka.Cluster.Retention; a window shorter than a known retention, a topic that
//     keeps records forever, and a retention that is unknown (denied, not reported, no such
//     topic) all refuse, with the reason per topic, unless forced. Deletion then runs in
//     bounded batches through dedup.Store.Prune.
//
// Both take their clients and an options struct and return a report with the snake_case
// JSON `fieldwork processed check` and `processed prune` print.
package processed
