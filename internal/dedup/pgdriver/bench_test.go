package pgdriver_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/fieldwork/fieldwork/internal/dedup"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkClaim compares claiming in batches (one transaction and one
// INSERT … unnest statement per 500 markers) with one marker per
// transaction, against the real PostgreSQL of FIELDWORK_TEST_DSN, in the
// same run:
//
//	go test -run '^$' -bench BenchmarkClaim -benchtime 1x ./internal/dedup/pgdriver
//
// FIELDWORK_BENCH_MARKERS (default 1,000,000) and FIELDWORK_BENCH_SINGLE
// (default 20,000) set the counts. One iteration runs the whole workload,
// the two paths alternating in ten rounds; it reports batched_markers/s,
// single_markers/s and their ratio. The test cluster of scripts/services.sh
// runs with fsync=off, which flatters the single-row path: with fsync on,
// each of its commits also waits for a WAL flush.
func BenchmarkClaim(b *testing.B) {
	dsn := testDSN(b)
	total := envInt("FIELDWORK_BENCH_MARKERS", 1_000_000)
	singles := envInt("FIELDWORK_BENCH_SINGLE", 20_000)
	const batch = 500
	ctx := context.Background()
	st := benchStore(b, dsn)

	marker := func(run, i int) dedup.Marker {
		return dedup.Marker{
			EventID:          fmt.Sprintf("%08x-%04x-4000-8000-%012x", run, i>>16, i),
			Topic:            "orders",
			Partition:        int32(i % 12),
			Offset:           int64(i),
			AggregateID:      fmt.Sprintf("order-%d", i/4),
			AggregateVersion: int64(i % 4),
		}
	}
	claimTx := func(consumer string, ms []dedup.Marker) int {
		var n int
		err := st.InTx(ctx, func(tx *dedup.Tx) error {
			fresh, err := st.Claim(ctx, tx, consumer, ms)
			n = len(fresh)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		return n
	}

	b.ResetTimer()
	for run := 0; b.Loop(); run++ {
		consumer := fmt.Sprintf("bench-%d", run)

		// The two paths alternate in ten rounds, so that both see the
		// same background load on a shared machine.
		const rounds = 10
		var batched, single time.Duration
		claimedBatched, claimedSingle := 0, 0
		ms := make([]dedup.Marker, 0, batch)
		for r := range rounds {
			start := time.Now()
			for i := r * total / rounds; i < (r+1)*total/rounds; i += batch {
				ms = ms[:0]
				for j := i; j < min(i+batch, (r+1)*total/rounds); j++ {
					ms = append(ms, marker(run, j))
				}
				claimedBatched += claimTx(consumer, ms)
			}
			batched += time.Since(start)

			start = time.Now()
			for i := r * singles / rounds; i < (r+1)*singles/rounds; i++ {
				claimedSingle += claimTx(consumer+"-single", []dedup.Marker{marker(run, i)})
			}
			single += time.Since(start)
		}
		if claimedBatched != total || claimedSingle != singles {
			b.Fatalf("fresh: batched %d of %d, single %d of %d", claimedBatched, total, claimedSingle, singles)
		}

		batchedRate := float64(total) / batched.Seconds()
		singleRate := float64(singles) / single.Seconds()
		b.ReportMetric(batchedRate, "batched_markers/s")
		b.ReportMetric(singleRate, "single_markers/s")
		b.ReportMetric(batchedRate/singleRate, "ratio")
		fmt.Printf("claim: %d markers in batches of %d: %v, %.0f markers/s; %d markers one per transaction: %v, %.0f markers/s; ratio %.1fx\n",
			total, batch, batched.Round(time.Millisecond), batchedRate, singles, single.Round(time.Millisecond), singleRate, batchedRate/singleRate)
	}
}

// benchStore is a migrated store in a fresh schema, dropped at cleanup.
func benchStore(b *testing.B, dsn string) *dedup.Store {
	ctx := context.Background()
	conn := admin(b, dsn)
	schema := randomSchema()
	b.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`)
		_ = conn.Close(context.Background())
	})
	st, err := dedup.Open(ctx, dsn, dedup.Options{Schema: schema})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	if _, err := st.Migrate(ctx, false); err != nil {
		b.Fatal(err)
	}
	return st
}

// BenchmarkJournal measures what a replay's journal costs: 200,000 acknowledged sends from 3
// source partitions, written in flushes of FIELDWORK_BENCH_FLUSH sends (default 2,000, the
// replay's), and prints sends per second and the server's share.
func BenchmarkJournal(b *testing.B) {
	dsn := testDSN(b)
	total := envInt("FIELDWORK_BENCH_SENDS", 200_000)
	flush := envInt("FIELDWORK_BENCH_FLUSH", 2_000)
	ctx := context.Background()
	st := benchStore(b, dsn)
	for b.Loop() {
		run := dedup.ReplayRun{ID: randomSchema(), Operator: "bench", Reason: "bench", Selection: "{}", Sources: []string{"orders.dlq"},
			Target: "original", Status: dedup.RunRunning, Owner: "bench"}
		var cps []dedup.ReplayCheckpoint
		for p := range int32(3) {
			cps = append(cps, dedup.ReplayCheckpoint{Topic: "orders.dlq", Partition: p, Start: 0, End: int64(total), AckedThrough: -1})
		}
		if err := st.CreateReplayRun(ctx, run, cps); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		now := time.Now()
		for i, n := 0, 0; i < total; n++ {
			sends := make([]dedup.ReplaySend, 0, flush)
			for ; len(sends) < flush && i < total; i++ {
				sends = append(sends, dedup.ReplaySend{SourceTopic: "orders.dlq", SourcePartition: int32(i % 3), SourceOffset: int64(i / 3),
					SourceTimestamp: now.Add(time.Duration(i/3-total) * time.Millisecond),
					EventID:         fmt.Sprintf("%08x-0000-4000-8000-%012d", i, i), TargetTopic: "orders", TargetPartition: int32(i % 6),
					TargetOffset: int64(i), At: now})
			}
			err := st.SaveReplayProgress(ctx, dedup.ReplayProgress{RunID: run.ID, Owner: "bench", Status: dedup.RunRunning,
				Sends: sends, FlushID: fmt.Sprintf("bench#%d", n), Now: now,
				Checkpoints: []dedup.ReplayCheckpoint{{Topic: "orders.dlq", Partition: 0, AckedThrough: int64(i/3 - 1)}}})
			if err != nil {
				b.Fatal(err)
			}
		}
		el := time.Since(start)
		b.ReportMetric(float64(total)/el.Seconds(), "sends/s")
		fmt.Printf("journal: %d sends in flushes of %d: %.2fs, %.0f sends/s\n", total, flush, el.Seconds(), float64(total)/el.Seconds())
	}
}
