package main

import (
	"strings"
	"testing"

	"github.com/fieldwork/fieldwork/internal/benchkit"
)

// A target not met says what the machine's CPU allows: a read that kept 2 cores 95% busy for
// 1,000 records in 1 s (1,900 µs of the machine's CPU a record, 1,000 its own) against a bare
// read of 2,000 records/s and a bound of 0.6 could spend 2 / (0.6 × 2,000) s = 1,666.7 µs.
func TestFloorOfAnUnmetTarget(t *testing.T) {
	var rep benchkit.Report
	rep.Add("read", "the read", benchkit.Run{Round: 1, Records: 1000, WallS: 1, CPUS: 1, MachineS: 1.9})
	rep.Add("bare", "the bare read", benchkit.Run{Round: 1, Records: 1000, WallS: 0.5, CPUS: 0.4, MachineS: 0.8})
	tg := target{what: "read vs bare", a: "read", b: "bare", bound: 0.6}
	if tg.met(rep) {
		t.Fatal("0.5x met a bound of 0.6x")
	}
	f, ok := tg.floor(rep, 2)
	if !ok {
		t.Fatal("no floor")
	}
	// The rest (900 µs) leaves fieldwork 766.7 µs of the 1,666.7: 23% less than its 1,000.
	if got := f.short(); got != "CPU-bound: cores 95% busy; budget 1666.7 µs, used 1900.0: fieldwork 1000.0, needs ≤ 766.7" {
		t.Errorf("short: %q", got)
	}
	if got := f.long(); !strings.Contains(got, "down to 766.7 µs a record (23% less)") {
		t.Errorf("long: %q", got)
	}
	// When the rest alone is over the budget, no process of fieldwork's can meet it.
	var heavy benchkit.Report
	heavy.Add("read", "the read", benchkit.Run{Round: 1, Records: 1000, WallS: 1, CPUS: 0.1, MachineS: 1.9})
	heavy.Add("bare", "the bare read", benchkit.Run{Round: 1, Records: 1000, WallS: 0.5})
	if f, _ := tg.floor(heavy, 2); !strings.Contains(f.short(), "the other processes alone used 1800.0") || !strings.Contains(f.long(), "cannot be met on this machine") {
		t.Errorf("heavy: %q / %q", f.short(), f.long())
	}
	// Busy cores but less CPU a record than the budget: the CPU did not hold it back.
	var within benchkit.Report
	within.Add("read", "the read", benchkit.Run{Round: 1, Records: 1000, WallS: 1, CPUS: 0.5, MachineS: 1.9})
	within.Add("bare", "the bare read", benchkit.Run{Round: 1, Records: 1000, WallS: 1})
	if f, _ := tg.floor(within, 2); !strings.HasPrefix(f.short(), "within the CPU budget: cores 95% busy; budget 3333.3 µs, used 1900.0") ||
		!strings.Contains(f.long(), "not what kept the ratio under the bound") || strings.Contains(f.long(), "less)") {
		t.Errorf("within: %q / %q", f.short(), f.long())
	}
	// Idle cores: it waited.
	var idle benchkit.Report
	idle.Add("read", "the read", benchkit.Run{Round: 1, Records: 1000, WallS: 1, CPUS: 0.2, MachineS: 0.6})
	idle.Add("bare", "the bare read", benchkit.Run{Round: 1, Records: 1000, WallS: 0.5})
	if f, _ := tg.floor(idle, 2); !strings.HasPrefix(f.short(), "waits: cores 30% busy") {
		t.Errorf("idle: %q", f.short())
	}
	// Without the machine's CPU (a report written before it was measured): no floor.
	var old benchkit.Report
	old.Add("read", "the read", benchkit.Run{Round: 1, Records: 1000, WallS: 1, CPUS: 1})
	old.Add("bare", "the bare read", benchkit.Run{Round: 1, Records: 1000, WallS: 0.5})
	if _, ok := tg.floor(old, 2); ok {
		t.Error("a floor without the machine's CPU")
	}
}

// A target with a limit (a's own work without the client) says it cannot be met when the
// limit's ratio to b is below the bound, and not when it is above.
func TestLimitOfAnUnmetTarget(t *testing.T) {
	var rep benchkit.Report
	for round := 1; round <= 3; round++ {
		rep.Add("consume", "the consumer", benchkit.Run{Round: round, Records: 1000, WallS: 2, CPUS: 1, MachineS: 3.8})
		rep.Add("alone", "its batches alone", benchkit.Run{Round: round, Records: 1000, WallS: 1.6, CPUS: 0.4, MachineS: 3})
		rep.Add("ceiling", "the claims alone", benchkit.Run{Round: round, Records: 1000, WallS: 1})
	}
	tg := target{what: "consumer vs ceiling", a: "consume", b: "ceiling", bound: 0.75, limit: "alone"}
	r, cannot, ok := tg.limited(rep)
	if !ok || !cannot || r != 0.625 {
		t.Fatalf("limited: %v %v %v, want 0.625 true true", r, cannot, ok)
	}
	if row := targetRow(tg, rep); !strings.Contains(row, "| not met | cannot be met here: its batches alone, no Kafka, reach 0.62x;") {
		t.Errorf("row: %q", row)
	}
	if got := tg.limitText(rep, r, cannot); !strings.Contains(got, "`alone`: its batches alone) reached 0.62x") || !strings.Contains(got, "cannot be met on this machine") {
		t.Errorf("text: %q", got)
	}
	// Room under the limit: not met, but not "cannot".
	tg.bound = 0.55
	tg.a = "consume"
	var slow benchkit.Report
	slow.Add("consume", "the consumer", benchkit.Run{Round: 1, Records: 1000, WallS: 2, CPUS: 1, MachineS: 3.8})
	slow.Add("alone", "its batches alone", benchkit.Run{Round: 1, Records: 1000, WallS: 1.6})
	slow.Add("ceiling", "the claims alone", benchkit.Run{Round: 1, Records: 1000, WallS: 1})
	if _, cannot, ok := tg.limited(slow); !ok || cannot {
		t.Errorf("0.62x said the bound of 0.55 cannot be met")
	}
	if row := targetRow(tg, slow); strings.Contains(row, "cannot") {
		t.Errorf("row: %q", row)
	}
	// No limit series: nothing said.
	tg.limit = "missing"
	if _, _, ok := tg.limited(rep); ok {
		t.Error("a limit without its runs")
	}
}
