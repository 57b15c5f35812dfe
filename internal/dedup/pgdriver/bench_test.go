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
// (default 20,000) set the counts. One iteration runs the whole workload;
// it reports batched_markers/s, single_markers/s and their ratio.
func BenchmarkClaim(b *testing.B) {
	dsn := testDSN(b)
	total := envInt("FIELDWORK_BENCH_MARKERS", 1_000_000)
	singles := envInt("FIELDWORK_BENCH_SINGLE", 20_000)
	const batch = 500
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
	defer st.Close()
	if _, err := st.Migrate(ctx, false); err != nil {
		b.Fatal(err)
	}

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

		start := time.Now()
		claimed := 0
		ms := make([]dedup.Marker, 0, batch)
		for i := 0; i < total; i += batch {
			ms = ms[:0]
			for j := i; j < min(i+batch, total); j++ {
				ms = append(ms, marker(run, j))
			}
			claimed += claimTx(consumer, ms)
		}
		batched := time.Since(start)
		if claimed != total {
			b.Fatalf("batched: %d of %d fresh", claimed, total)
		}

		start = time.Now()
		claimed = 0
		for i := 0; i < singles; i++ {
			claimed += claimTx(consumer+"-single", []dedup.Marker{marker(run, i)})
		}
		single := time.Since(start)
		if claimed != singles {
			b.Fatalf("single: %d of %d fresh", claimed, singles)
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
