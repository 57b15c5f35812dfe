// Package inboxlink joins the public package inbox to the rest of fieldwork without widening
// inbox's API: inbox sets these functions in its init, and the consumer runner and the CLI
// call them to reach the dedup store behind an inbox.Store or inbox.Tx (the transaction's
// savepoints, a store opened with the CLI's naming and presets). Nothing outside this module
// can import it.
package inboxlink

import "github.com/fieldwork/fieldwork/internal/dedup"

var (
	// NewStore returns an *inbox.Store over s.
	NewStore func(s *dedup.Store) any
	// Store returns the dedup store behind an *inbox.Store.
	Store func(s any) *dedup.Store
	// NewTx returns an *inbox.Tx over tx.
	NewTx func(tx *dedup.Tx) any
	// Tx returns the dedup transaction behind an *inbox.Tx.
	Tx func(tx any) *dedup.Tx
)
