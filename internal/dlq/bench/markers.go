package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/fieldwork/fieldwork/internal/benchkit"
	"github.com/fieldwork/fieldwork/internal/dedup"
)

// claimBatch is the markers per transaction of the claim contenders: the consume benchmark's
// marker ceiling's batch.
const claimBatch = 500

// markerScale is the store at scale (issue 32): a topic of -marker-events events, and two
// marker tables that hold a marker of consumer "bench" for each: small, of just those, and
// large, of -marker-table markers, whose statistics were gathered before "bench" wrote.
type markerScale struct {
	topic        string
	small, large *dedup.Store
	schemas      [2]string // small's, large's
	conn         *pgx.Conn
}

// markerTables builds the marker-scale part: the large table's other consumers' markers are
// written with one INSERT … SELECT generate_series and analyzed, with autovacuum off for the
// table so that no analyze runs behind the benchmark; then the topic is filled and "bench"
// claims its markers in the small table, and they are copied into the large one: statistics
// gathered before a consumer wrote judge it rare, as on the 10-million-marker table.
// The topic and the schemas are added to topics and schemas, for the cleanup.
func markerTables(ctx context.Context, cfg config, adm *kadm.Client, id string, topics, schemas *[]string) *markerScale {
	m := &markerScale{schemas: [2]string{"fwbench_dlq_" + id + "_small", "fwbench_dlq_" + id + "_large"}}
	*schemas = append(*schemas, m.schemas[:]...)
	var err error
	if m.conn, err = pgx.Connect(ctx, cfg.dsn); err != nil {
		fail(err)
	}
	open := func(schema string) *dedup.Store {
		st, err := dedup.Open(ctx, cfg.dsn, dedup.Options{Schema: schema})
		if err != nil {
			fail(err)
		}
		if _, err := st.Migrate(ctx, false); err != nil {
			fail(err)
		}
		return st
	}
	m.small, m.large = open(m.schemas[0]), open(m.schemas[1])
	others := max(0, cfg.markerTable-cfg.markerEvents)
	start := time.Now()
	for _, q := range []string{
		`ALTER TABLE ` + m.large.Table() + ` SET (autovacuum_enabled = false)`,
		`INSERT INTO ` + m.large.Table() + ` (consumer, event_id, processed_at, topic, partition, "offset")
SELECT 'other-' || (g % 40), 'evt-' || lpad(g::text, 10, '0'), now() - interval '7 days' + g * interval '1 ms', 'tasks', g % 12, g
FROM generate_series(1, ` + strconv.Itoa(others) + `) g`,
		`ANALYZE ` + m.large.Table(),
	} {
		if _, err := m.conn.Exec(ctx, q); err != nil {
			fail(fmt.Errorf("%s: %w", q, err))
		}
	}
	fmt.Printf("wrote %d markers of 40 other consumers into %s and analyzed it, in %s\n", others, m.large.Table(), time.Since(start).Round(time.Millisecond))
	m.topic = createAndFill(ctx, cfg, adm, fmt.Sprintf("fieldwork-bench-%s-%d-marked", id, cfg.markerEvents), cfg.markerEvents, m.small)
	*topics = append(*topics, m.topic)
	if _, err := m.conn.Exec(ctx, `INSERT INTO `+m.large.Table()+` SELECT * FROM `+m.small.Table()); err != nil {
		fail(err)
	}
	// The large table's writing leaves gigabytes of dirty pages: written out now, not by the
	// checkpointer during the rounds, where it would slow whichever contender ran then. Only a
	// superuser or pg_checkpoint may; without, the rounds share that cost.
	if _, err := m.conn.Exec(ctx, `CHECKPOINT`); err != nil {
		fmt.Printf("note: no CHECKPOINT before the rounds: %v\n", err)
	}
	return m
}

func (m *markerScale) close() {
	_ = m.small.Close()
	_ = m.large.Close()
	_ = m.conn.Close(context.Background())
}

// contenders are processed check of the topic and the claim, against each table.
func (m *markerScale) contenders(cfg config, bin string) []contender {
	var cs []contender
	for i, st := range []*dedup.Store{m.small, m.large} {
		key, rows := "markers", cfg.markerEvents
		if i == 1 {
			key, rows = "markers/large", cfg.markerTable
		}
		check := []string{bin, "processed", "check", "--topic", m.topic, "--consumer", "bench", "--brokers", cfg.brokers,
			"--dsn", cfg.dsn, "--schema", m.schemas[i], "-o", "json"}
		cs = append(cs,
			contender{key + "/check", fmt.Sprintf("fieldwork processed check -o json, table of %d markers", rows), cfg.markerEvents, check, jsonCount("with_marker"), nil, false},
			contender{key + "/claim", fmt.Sprintf("claims of fresh markers in batches of %d, table of %d markers", claimBatch, rows), cfg.markerEvents, nil, nil,
				func(round int) (benchkit.Run, error) { return m.claim(st, cfg.markerEvents, round) }, false})
	}
	return cs
}

// claim claims n fresh markers of consumer "claim-ROUND" in st, claimBatch a transaction, timed;
// then deletes them and vacuums the table, not timed, so that every round meets the table at
// its size.
func (m *markerScale) claim(st *dedup.Store, n, round int) (benchkit.Run, error) {
	ctx := context.Background()
	consumer := fmt.Sprintf("claim-%d", round)
	ms := make([]dedup.Marker, 0, claimBatch)
	fresh := 0
	meter := benchkit.StartMeter()
	for i := 0; i < n; i += claimBatch {
		ms = ms[:0]
		for j := i; j < min(i+claimBatch, n); j++ {
			ms = append(ms, dedup.Marker{EventID: fmt.Sprintf("claim-%d-%09d", round, j), Topic: "tasks", Partition: int32(j % 12), Offset: int64(j)})
		}
		err := st.InTx(ctx, func(tx *dedup.Tx) error {
			got, err := st.Claim(ctx, tx, consumer, ms)
			fresh += len(got)
			return err
		})
		if err != nil {
			return benchkit.Run{}, err
		}
	}
	run := meter.Run(0) // the records are the caller's
	if fresh != n {
		return run, fmt.Errorf("claimed %d fresh markers of %d", fresh, n)
	}
	if _, err := m.conn.Exec(ctx, `DELETE FROM `+st.Table()+` WHERE consumer = $1`, consumer); err != nil {
		return run, err
	}
	// Vacuumed, so that the next round does not insert among this one's dead entries: the
	// large table's autovacuum is off (its statistics must stay stale), and every round would
	// otherwise meet more dead markers than the one before. VACUUM leaves the column
	// statistics the planner judges the consumer by as they are (only ANALYZE gathers them).
	_, err := m.conn.Exec(ctx, `VACUUM `+st.Table())
	return run, err
}
