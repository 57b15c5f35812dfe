// Package inbox claims events inside the caller's own database transaction: the
// processed-event markers of fieldwork, for a Go service's own consumer.
//
// (The manual is written in docs/library.md and in this comment once the API settles.)
package inbox
