package benchkit

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestMain doubles as the child Measure measures: with BENCHKIT_CHILD_MIB set it touches that
// many MiB and exits with BENCHKIT_CHILD_EXIT.
func TestMain(m *testing.M) {
	if v := os.Getenv("BENCHKIT_CHILD_MIB"); v != "" {
		mib, _ := strconv.Atoi(v)
		b := make([]byte, mib<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		code, _ := strconv.Atoi(os.Getenv("BENCHKIT_CHILD_EXIT"))
		os.Exit(code + int(b[len(b)/2]) - 1)
	}
	os.Exit(m.Run())
}

func child(t *testing.T, mib, exit int) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), "BENCHKIT_CHILD_MIB="+strconv.Itoa(mib), "BENCHKIT_CHILD_EXIT="+strconv.Itoa(exit))
	return cmd
}

// The child's own peak, not this process's: a parent holding 256 MiB measures a child that
// touches 16 MiB well under 256 MiB, and one that touches 128 MiB at 128 MiB or more (more
// under the race detector, whose shadow memory the child, this test binary, carries too).
func TestMeasurePeakIsTheChilds(t *testing.T) {
	testenv.Tool(t, TimeBinary)
	held := make([]byte, 256<<20)
	for i := 0; i < len(held); i += 4096 {
		held[i] = 1
	}
	small, err := Measure(child(t, 16, 0), nil)
	if err != nil {
		t.Fatal(err)
	}
	large, err := Measure(child(t, 128, 0), nil)
	if err != nil {
		t.Fatal(err)
	}
	if small.PeakMiB() < 16 || small.PeakMiB() > 128 {
		t.Errorf("child touching 16 MiB: peak %.1f MiB, want between 16 and 128 (this process holds %d MiB)", small.PeakMiB(), len(held)>>20)
	}
	if large.PeakMiB() < 128 || large.PeakMiB() < small.PeakMiB()+100 {
		t.Errorf("child touching 128 MiB: peak %.1f MiB, want at least 128 and 100 more than the small child's %.1f", large.PeakMiB(), small.PeakMiB())
	}
	if small.WallS <= 0 || small.CPUS <= 0 {
		t.Errorf("wall %.3fs, CPU %.3fs: want both measured", small.WallS, small.CPUS)
	}
	_ = held[len(held)-1]
}

func TestMeasureExitCodes(t *testing.T) {
	testenv.Tool(t, TimeBinary)
	if _, err := Measure(child(t, 1, 3), nil, 3); err != nil {
		t.Errorf("exit 3 listed as ok: %v", err)
	}
	if _, err := Measure(child(t, 1, 3), nil); err == nil {
		t.Error("exit 3 not listed: no error")
	}
}

func TestMedianSpreadRotate(t *testing.T) {
	if got := Median([]float64{3, 1, 2}); got != 2 {
		t.Errorf("Median odd = %v, want 2", got)
	}
	if got := Median([]float64{4, 1, 2, 3}); got != 2.5 {
		t.Errorf("Median even = %v, want 2.5", got)
	}
	if lo, hi := Spread([]float64{3, 1, 2}); lo != 1 || hi != 3 {
		t.Errorf("Spread = %v–%v, want 1–3", lo, hi)
	}
	xs := []string{"a", "b", "c"}
	for r, want := range [][]string{{"a", "b", "c"}, {"b", "c", "a"}, {"c", "a", "b"}, {"a", "b", "c"}} {
		if got := Rotate(xs, r); !slices.Equal(got, want) {
			t.Errorf("Rotate(round %d) = %v, want %v", r, got, want)
		}
	}
	if !slices.Equal(xs, []string{"a", "b", "c"}) {
		t.Errorf("Rotate changed its argument: %v", xs)
	}
}

func TestReportAddGet(t *testing.T) {
	var r Report
	r.Add("x", "the x", Run{Round: 1, Records: 10, WallS: 2})
	r.Add("x", "the x", Run{Round: 2, Records: 10, WallS: 5})
	r.Add("y", "the y", Run{Round: 1, Records: 1, WallS: 1})
	s, ok := r.Get("x")
	if !ok || len(s.Runs) != 2 || len(r.Series) != 2 {
		t.Fatalf("series %+v", r.Series)
	}
	if got := s.Rates(); !slices.Equal(got, []float64{5, 2}) {
		t.Errorf("Rates = %v, want [5 2]", got)
	}
	path := t.TempDir() + "/r.json"
	if err := r.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSON(path)
	if err != nil || len(back.Series) != 2 || back.Series[0].Runs[1].WallS != 5 {
		t.Errorf("ReadJSON = %+v, %v", back, err)
	}
}

// A meter counts this process's CPU time and the machine's, which holds it: spinning until
// this process has used 200 ms of CPU shows at least most of it in the machine's (whose
// counters tick every 10 ms).
func TestMeterCountsTheMachine(t *testing.T) {
	m := StartMeter()
	spin := 0
	for SelfCPU()-m.self < 200*time.Millisecond {
		for i := range 100_000 {
			spin += i & 3
		}
	}
	r := m.Run(7)
	if r.Records != 7 || r.WallS <= 0 || r.CPUS < 0.2 || r.MachineS < 0.15 {
		t.Errorf("run %+v (spun %d): want 7 records, CPU ≥ 0.2 s and the machine's ≥ 0.15 s", r, spin)
	}
	if busy := r.Busy(1); busy <= 0 {
		t.Errorf("busy %.2f of one core: want > 0", busy)
	}
}
