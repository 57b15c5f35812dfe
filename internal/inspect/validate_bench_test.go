package inspect_test

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/inspect"
	"github.com/fieldwork/fieldwork/internal/inspect/inspecttest"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// BenchmarkValidateSpilled lints 100,000 events (20,000 aggregates) of the real broker with
// 16,384 fingerprints in memory, so that both tables spill and every lookup past the first
// spill asks the Bloom filter: inspect validate over a topic larger than its memory. It
// reports records/s and the process's CPU time per record (steadier than wall time on a
// shared machine).
func BenchmarkValidateSpilled(b *testing.B) {
	const n = 100_000
	c := testenv.Cluster(b)
	topic := inspecttest.Topic(b, 1)
	cl := inspecttest.Producer(b, topic)
	recs := make([]*kgo.Record, 0, n)
	for i := range n {
		agg := fmt.Sprintf("agg-%d", i%20_000)
		recs = append(recs, inspecttest.Rec(0, i, []byte(agg), inspecttest.Structured(fmt.Sprintf("ev-%d", i), "t", agg, int64(i/20_000+1), `{"n":1}`)))
	}
	testenv.Produce(b, cl, recs...)
	var ru0, ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	start := time.Now()
	for b.Loop() {
		res, err := inspect.Validate(b.Context(), c, topic, kafka.Selection{}, inspect.ValidateOptions{MemoryEntries: 1 << 14, TempDir: b.TempDir()})
		if err != nil || !res.SpilledToDisk || res.Events != n {
			b.Fatalf("validate: %v (spilled %v, %d events)", err, res != nil && res.SpilledToDisk, res.Events)
		}
	}
	el := time.Since(start)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	b.ReportMetric(float64(n*b.N)/el.Seconds(), "records/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/1000/float64(n*b.N), "cpu-µs/record")
}
