package main

import (
	"strings"
	"testing"

	"github.com/fieldwork/fieldwork/internal/benchkit"
)

// A target not met says what the machine's CPU allows: a read that kept 2 cores 95% busy for
// 1,000 records in 1 s (1,900 µs of the machine's CPU a record, 1,000 its own) against a bare
// read of 2,000 records/s and a bound of 0.6 could spend 2 × 0.95 / (0.6 × 2,000) s = 1,583.3
// µs, the cores as busy.
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
	// The rest (900 µs) leaves fieldwork 683.3 µs of the 1,583.3: 32% less than its 1,000.
	if got := f.short(); got != "CPU-bound: cores 95% busy; budget 1583.3 µs, used 1900.0 µs (fieldwork 1000.0): fieldwork needs ≤ 683.3" {
		t.Errorf("short: %q", got)
	}
	if got := f.long(); !strings.Contains(got, "down to 683.3 µs a record (32% less)") {
		t.Errorf("long: %q", got)
	}
	// With the client alone measured: what the bound leaves fieldwork's work beyond the
	// client (1,583.3 − 900 − 500 = 183.3 µs of its 500), or that nothing is left.
	withClient := target{what: "read vs bare", a: "read", b: "bare", bound: 0.6, client: "client"}
	rep.Add("client", "the client alone", benchkit.Run{Round: 1, Records: 1000, WallS: 0.5, CPUS: 0.5})
	if f, _ := withClient.floor(rep, 2); !strings.Contains(f.long(), "beyond the client is about 500.0 µs a record, and the bound leaves it 183.3 (63% less).") {
		t.Errorf("client: %q", f.long())
	}
	rep.Series[len(rep.Series)-1].Runs[0].CPUS = 0.8
	if f, _ := withClient.floor(rep, 2); !strings.Contains(f.long(), "no work beyond the client fits, and the bound cannot be met on this machine") {
		t.Errorf("client over: %q", f.long())
	}
	// The services' CPU, measured, is named apart from the rest.
	var split benchkit.Report
	split.Add("read", "the read", benchkit.Run{Round: 1, Records: 1000, WallS: 1, CPUS: 1, MachineS: 1.9, PostgresS: 0.3, BrokerS: 0.2})
	split.Add("bare", "the bare read", benchkit.Run{Round: 1, Records: 1000, WallS: 0.5})
	if f, _ := tg.floor(split, 2); !strings.Contains(f.short(), "used 1900.0 µs (fieldwork 1000.0, PostgreSQL 300.0, the broker 200.0, the rest 400.0)") ||
		!strings.Contains(f.long(), "fieldwork's own process 1000.0, PostgreSQL's processes 300.0, the Kafka broker 200.0, the rest (the reader of its output, the machine's other work) 400.0.") {
		t.Errorf("split: %q / %q", f.short(), f.long())
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
	if f, _ := tg.floor(within, 2); !strings.HasPrefix(f.short(), "within the CPU budget: cores 95% busy; budget 3166.7 µs, used 1900.0 µs") ||
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

// A target with a limit (a's own work without the client) says so when the limit's ratio to b
// is below the bound, and not when it is above.
func TestLimitOfAnUnmetTarget(t *testing.T) {
	var rep benchkit.Report
	for round := 1; round <= 3; round++ {
		rep.Add("consume", "the consumer", benchkit.Run{Round: round, Records: 1000, WallS: 2, CPUS: 1, MachineS: 3.8})
		rep.Add("alone", "its batches alone", benchkit.Run{Round: round, Records: 1000, WallS: 1.6, CPUS: 0.4, MachineS: 3})
		rep.Add("ceiling", "the claims alone", benchkit.Run{Round: round, Records: 1000, WallS: 1})
	}
	tg := target{what: "consumer vs ceiling", a: "consume", b: "ceiling", bound: 0.75, limit: "alone", limitWords: batchesAlone}
	r, below, ok := tg.limited(rep)
	if !ok || !below || r != 0.625 {
		t.Fatalf("limited: %v %v %v, want 0.625 true true", r, below, ok)
	}
	if row := targetRow(tg, rep); !strings.Contains(row, "| not met | its batches alone, no Kafka, reach 0.62x, below the bound;") {
		t.Errorf("row: %q", row)
	}
	// The consumer: 500 records/s against its batches alone's 625.
	if got := tg.limitText(rep, r, below); !strings.Contains(got, "`alone`: its batches alone) reached 0.62x, the median of the rounds (0.62–0.62). The consumer reached 0.80x of it") ||
		!strings.Contains(got, "stayed below the bound (≥ 0.75x) in this run") {
		t.Errorf("text: %q", got)
	}
	// The listing's limit and the replay's say the same in their own words.
	for _, c := range []struct {
		name              string
		words             *limitWords
		row, whose, floor string
	}{
		{"listing", linesAlone, "its own read writing its lines, no parsing, reaches", "The listing", "with the listing's own encoder and no parsing at all"},
		{"replay", recordsAlone, "the client alone writing its records (route, provenance) reaches", "The replay", "with nothing parsed, decided or journaled"},
		{"replay's journal", journaledAlone, "the client alone writing and journaling its records reaches", "The replay",
			"with nothing parsed beyond the route and the event id and nothing decided"},
	} {
		other := tg
		other.limitWords = c.words
		if row := targetRow(other, rep); !strings.Contains(row, "| not met | "+c.row+" 0.62x, below the bound;") {
			t.Errorf("%s's row: %q", c.name, row)
		}
		if got := other.limitText(rep, r, below); !strings.Contains(got, c.whose+" reached 0.80x of it") ||
			!strings.Contains(got, c.floor+", stayed below the bound (≥ 0.75x) in this run") {
			t.Errorf("%s's text: %q", c.name, got)
		}
	}
	records := tg
	records.limitWords = recordsAlone
	// Room under the limit: not met, but not "cannot".
	tg.bound = 0.55
	tg.a = "consume"
	var slow benchkit.Report
	slow.Add("consume", "the consumer", benchkit.Run{Round: 1, Records: 1000, WallS: 2, CPUS: 1, MachineS: 3.8})
	slow.Add("alone", "its batches alone", benchkit.Run{Round: 1, Records: 1000, WallS: 1.6})
	slow.Add("ceiling", "the claims alone", benchkit.Run{Round: 1, Records: 1000, WallS: 1})
	if _, below, ok := tg.limited(slow); !ok || below {
		t.Errorf("0.62x said below the bound of 0.55")
	}
	if row := targetRow(tg, slow); strings.Contains(row, "below the bound") {
		t.Errorf("row: %q", row)
	}
	records.bound = 0.55
	if got := records.limitText(slow, 0.625, false); !strings.Contains(got, "That is within the bound: the rest of the gap is the replay's own (parsing the dead letters") {
		t.Errorf("replay's text above its limit: %q", got)
	}
	// No limit series: nothing said.
	tg.limit = "missing"
	if _, _, ok := tg.limited(rep); ok {
		t.Error("a limit without its runs")
	}
}

// A bound every round must meet is judged against its limit's lowest round: a limit whose
// median clears the bound but whose lowest round does not says "cannot", in those words.
func TestLimitOfAnEveryRoundTarget(t *testing.T) {
	var rep benchkit.Report
	for round, floorS := range []float64{0.6, 0.7, 0.5} { // the floor against kcat: 1.67x, 1.43x, 2x
		rep.Add("replay", "the replay", benchkit.Run{Round: round + 1, Records: 1000, WallS: 1, CPUS: 1, MachineS: 1.9})
		rep.Add("rewrite", "the records alone", benchkit.Run{Round: round + 1, Records: 1000, WallS: floorS})
		rep.Add("kcat", "kcat", benchkit.Run{Round: round + 1, Records: 1000, WallS: 1})
	}
	tg := target{what: "replay vs kcat, every round", a: "replay", b: "kcat", bound: 1.5, minRound: true, limit: "rewrite", limitWords: recordsAlone}
	r, below, ok := tg.limited(rep)
	if !ok || !below || r != 1/0.7 {
		t.Fatalf("limited: %v %v %v, want %v true true", r, below, ok, 1/0.7)
	}
	if row := targetRow(tg, rep); !strings.Contains(row, "| not met | the client alone writing its records (route, provenance) reaches 1.43x in its lowest round, below the bound;") {
		t.Errorf("row: %q", row)
	}
	if got := tg.limitText(rep, r, below); !strings.Contains(got, "reached 1.43x, in its lowest round (median 1.67) (1.43–2.00).") ||
		!strings.Contains(got, "stayed below the bound (≥ 1.5x every round) in this run") {
		t.Errorf("text: %q", got)
	}
	// Every round of the floor above the bound: room, not "cannot", though the replay misses it.
	var room benchkit.Report
	for round := 1; round <= 3; round++ {
		room.Add("replay", "the replay", benchkit.Run{Round: round, Records: 1000, WallS: 1})
		room.Add("rewrite", "the records alone", benchkit.Run{Round: round, Records: 1000, WallS: 0.6})
		room.Add("kcat", "kcat", benchkit.Run{Round: round, Records: 1000, WallS: 1})
	}
	if _, below, ok := tg.limited(room); !ok || below {
		t.Errorf("a floor of 1.67x every round said below 1.5")
	}
	if row := targetRow(tg, room); !strings.Contains(row, "| not met |") || strings.Contains(row, "below the bound") {
		t.Errorf("row: %q", row)
	}
}

// A median that two decimals would round onto the bound is written with three.
func TestFigureNearTheBound(t *testing.T) {
	tg := target{bound: 0.8}
	for v, want := range map[float64]string{0.797: "0.797", 0.8: "0.80", 0.803: "0.803", 0.79: "0.79", 0.85: "0.85"} {
		if got := tg.figure(v); got != want {
			t.Errorf("figure(%v) = %q, want %q", v, got, want)
		}
	}
	if got := (target{}).figure(0.797); got != "0.80" {
		t.Errorf("without a bound: %q", got)
	}
}
