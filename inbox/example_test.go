package inbox_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/fieldwork/fieldwork/inbox"
)

// exampleStore opens a migrated store in a new SQLite file and returns it with its path and a
// function that closes it and removes the file. (A service opens its PostgreSQL database the
// same way: inbox.Open(ctx, "postgres://…").)
func exampleStore(ctx context.Context) (*inbox.Store, string, func()) {
	dir, err := os.MkdirTemp("", "inbox-example")
	if err != nil {
		log.Fatal(err)
	}
	path := filepath.Join(dir, "orders.db")
	st, err := inbox.Open(ctx, "sqlite:"+path)
	if err != nil {
		log.Fatal(err)
	}
	if err := st.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	return st, path, func() { _ = st.Close(); _ = os.RemoveAll(dir) }
}

// A consumer claims each event in the transaction that applies it: the marker and the effect
// commit together, and a redelivered event is a duplicate.
func Example() {
	ctx := context.Background()
	st, _, done := exampleStore(ctx)
	defer done()

	// The consumer's own table, beside the markers.
	orders := st.Table("order_totals")
	err := st.InTx(ctx, func(tx *inbox.Tx) error {
		_, err := tx.Exec(ctx, `CREATE TABLE `+orders+` (order_id text PRIMARY KEY, total bigint NOT NULL)`)
		return err
	})
	if err != nil {
		log.Fatal(err)
	}

	handle := func(id, order string, amount int64) {
		err := st.InTx(ctx, func(tx *inbox.Tx) error {
			verdicts, err := st.Claim(ctx, tx, "order-totals", []inbox.Event{{ID: id, Topic: "orders"}})
			if err != nil {
				return err
			}
			fmt.Println(id, verdicts[0])
			if verdicts[0] != inbox.Fresh {
				return nil // processed before: apply nothing
			}
			_, err = tx.Exec(ctx, `INSERT INTO `+orders+` (order_id, total) VALUES ($1, $2)
ON CONFLICT (order_id) DO UPDATE SET total = `+orders+`.total + excluded.total`, order, amount)
			return err
		})
		if err != nil {
			log.Fatal(err)
		}
	}
	handle("evt-1", "o-1", 30)
	handle("evt-2", "o-1", 12)
	handle("evt-1", "o-1", 30) // redelivered

	var total int64
	err = st.InTx(ctx, func(tx *inbox.Tx) error {
		return tx.QueryRow(ctx, `SELECT total FROM `+orders+` WHERE order_id = $1`, "o-1").Scan(&total)
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("total", total)
	// Output:
	// evt-1 fresh
	// evt-2 fresh
	// evt-1 duplicate
	// total 42
}

// The version guard: an event whose aggregate the consumer already has at that version or a
// newer one is stale. In one batch the offset order decides; a stale event stays marked.
func ExampleGuardVersions() {
	ctx := context.Background()
	st, _, done := exampleStore(ctx)
	defer done()

	batch := []inbox.Event{
		{ID: "e-3", AggregateID: "order-7", Version: 3, HasVersion: true},
		{ID: "e-2", AggregateID: "order-7", Version: 2, HasVersion: true}, // older than e-3
		{ID: "e-4", AggregateID: "order-7", Version: 4, HasVersion: true},
	}
	later := []inbox.Event{
		{ID: "e-4", AggregateID: "order-7", Version: 4, HasVersion: true}, // redelivered
		{ID: "e-4b", AggregateID: "order-7", Version: 4, HasVersion: true},
		{ID: "e-5", AggregateID: "order-7", Version: 5, HasVersion: true},
	}
	for _, evs := range [][]inbox.Event{batch, later} {
		err := st.InTx(ctx, func(tx *inbox.Tx) error {
			verdicts, err := st.Claim(ctx, tx, "order-view", evs, inbox.GuardVersions())
			if err != nil {
				return err
			}
			for i, v := range verdicts {
				fmt.Println(evs[i].ID, v) // apply only the fresh ones, here in tx
			}
			return nil
		})
		if err != nil {
			log.Fatal(err)
		}
	}
	// Output:
	// e-3 fresh
	// e-2 stale
	// e-4 fresh
	// e-4 duplicate
	// e-4b stale
	// e-5 fresh
}

// Adopt claims in a transaction the service began itself, here with database/sql on the same
// SQLite file (on PostgreSQL: a pgx.Tx of the service's own pool). The service commits it; the
// adopted Tx never does.
func ExampleStore_Adopt() {
	ctx := context.Background()
	st, path, done := exampleStore(ctx)
	defer done()

	db, err := sql.Open("sqlite", path+"?_txlock=immediate")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	own, err := db.BeginTx(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer own.Rollback()

	tx, err := st.Adopt(own)
	if err != nil {
		log.Fatal(err)
	}
	verdicts, err := st.Claim(ctx, tx, "mailer", []inbox.Event{{ID: "welcome-1"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(verdicts)
	fmt.Println(tx.Commit(ctx) == inbox.ErrAdopted)
	if err := own.Commit(); err != nil { // the service's commit: marker and effects together
		log.Fatal(err)
	}

	err = st.InTx(ctx, func(tx *inbox.Tx) error {
		verdicts, err = st.Claim(ctx, tx, "mailer", []inbox.Event{{ID: "welcome-1"}})
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(verdicts)
	// Output:
	// [fresh]
	// true
	// [duplicate]
}
