// Package benchkit is what the benchmark commands share (internal/consume/bench,
// internal/dlq/bench, internal/replay/replaybench and the suite that runs them all,
// internal/benchsuite): a measured run of one contender, a child process measured as the
// kernel sees it (wall time, CPU time, peak resident set size from wait4's rusage), medians
// and spreads, the JSON report a benchmark writes with -json for the suite to read, and the
// setup they repeat (a fresh topic, a schema dropped after: setup.go). It
// asserts nothing: benchmarks print figures and are not part of the tests (docs/design.md
// §5).
package benchkit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Run is one measurement of one contender in one round.
type Run struct {
	Round   int     `json:"round"`
	Records int64   `json:"records"`
	WallS   float64 `json:"wall_s"`
	CPUS    float64 `json:"cpu_s,omitempty"`    // user + system of the process measured; 0: not measured
	PeakKiB int64   `json:"peak_kib,omitempty"` // the child's maximum resident set size; 0: not a child
	// MachineS is the busy CPU time of the whole machine over the run (every process: the
	// broker's, PostgreSQL's, the contender's); 0: not measured.
	MachineS float64 `json:"machine_cpu_s,omitempty"`
	// PostgresS and BrokerS are the parts of MachineS that PostgreSQL's processes and the
	// Kafka broker spent (ServiceCPU); 0: not measured, or none spent.
	PostgresS float64 `json:"postgres_cpu_s,omitempty"`
	BrokerS   float64 `json:"broker_cpu_s,omitempty"`
}

// Busy is the share of the machine's cores busy over the run (0: not measured).
func (r Run) Busy(cores int) float64 {
	if r.WallS <= 0 || cores <= 0 {
		return 0
	}
	return r.MachineS / (r.WallS * float64(cores))
}

// Rate is records per second of wall time.
func (r Run) Rate() float64 {
	if r.WallS <= 0 {
		return 0
	}
	return float64(r.Records) / r.WallS
}

// PeakMiB is the peak resident set size in MiB.
func (r Run) PeakMiB() float64 { return float64(r.PeakKiB) / 1024 }

func (r Run) String() string {
	s := fmt.Sprintf("%d records in %.2fs: %.0f records/s", r.Records, r.WallS, r.Rate())
	if r.CPUS > 0 {
		s += fmt.Sprintf(", CPU %.2fs", r.CPUS)
	}
	if r.PeakKiB > 0 {
		s += fmt.Sprintf(", peak RSS %.1f MiB", r.PeakMiB())
	}
	return s
}

// Series is every run of one contender.
type Series struct {
	// Key names the contender for the suite ("consume/projection", "dlq/stats", …).
	Key string `json:"key"`
	// Label says what was run, for a reader.
	Label string `json:"label"`
	Runs  []Run  `json:"runs"`
}

// Rates are the runs' records per second, in round order.
func (s Series) Rates() []float64 {
	out := make([]float64, len(s.Runs))
	for i, r := range s.Runs {
		out[i] = r.Rate()
	}
	return out
}

// Peaks are the runs' peak RSS in MiB, in round order.
func (s Series) Peaks() []float64 {
	out := make([]float64, len(s.Runs))
	for i, r := range s.Runs {
		out[i] = r.PeakMiB()
	}
	return out
}

// Report is what one benchmark command measured, as it writes it with -json.
type Report struct {
	Bench  string   `json:"bench"`
	Series []Series `json:"series"`
	// Notes are facts about the run a reader needs (data set, settings).
	Notes []string `json:"notes,omitempty"`
}

// Add appends run to the series keyed key (created with label on first use).
func (r *Report) Add(key, label string, run Run) {
	for i := range r.Series {
		if r.Series[i].Key == key {
			r.Series[i].Runs = append(r.Series[i].Runs, run)
			return
		}
	}
	r.Series = append(r.Series, Series{Key: key, Label: label, Runs: []Run{run}})
}

// Get is the series keyed key, if measured.
func (r Report) Get(key string) (Series, bool) {
	for _, s := range r.Series {
		if s.Key == key {
			return s, true
		}
	}
	return Series{}, false
}

// WriteJSON writes the report to path ("" writes nothing).
func (r Report) WriteJSON(path string) error {
	if path == "" {
		return nil
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// ReadJSON reads a report written by WriteJSON.
func ReadJSON(path string) (Report, error) {
	var r Report
	b, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	return r, json.Unmarshal(b, &r)
}

// TimeBinary is GNU time, which scripts/services.sh installs. Measure starts every child
// through it: a child started by this process directly would report, as its peak RSS, this
// process's own at the time (Linux keeps the highest RSS of the address space a process
// replaces on exec, and Go starts children in its own address space until they exec).
const TimeBinary = "/usr/bin/time"

// Measure runs cmd to completion (stdout to out, nil: discarded; stderr to this process's)
// and returns its wall time, CPU time and peak RSS (the child's maximum resident set size as
// wait4 reports it, read through GNU time's %M). An exit code listed in okCodes is not an
// error (the checks exit 3 when they find something).
func Measure(cmd *exec.Cmd, out io.Writer, okCodes ...int) (Run, error) {
	if out == nil {
		out = io.Discard
	}
	rss, err := os.CreateTemp("", "fieldwork-bench-rss")
	if err != nil {
		return Run{}, err
	}
	defer os.Remove(rss.Name())
	_ = rss.Close()
	args := cmd.Args
	cmd.Path = TimeBinary
	cmd.Args = append([]string{TimeBinary, "-o", rss.Name(), "-f", "%M", "--"}, args...)
	cmd.Stdout = out
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	cpu := ReadCPU()
	start := time.Now()
	err = cmd.Run()
	wall := time.Since(start)
	var exit *exec.ExitError
	if errors.As(err, &exit) && slices.Contains(okCodes, exit.ExitCode()) {
		err = nil
	}
	if err != nil {
		return Run{}, fmt.Errorf("%s: %w", strings.Join(args, " "), err)
	}
	r := Run{WallS: wall.Seconds(), CPUS: (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()}
	cpu.Fill(&r)
	b, err := os.ReadFile(rss.Name())
	if err != nil {
		return Run{}, err
	}
	// The last line: GNU time writes "Command exited with non-zero status N" before it.
	lines := strings.Fields(strings.TrimSpace(string(b)))
	if len(lines) == 0 {
		return Run{}, fmt.Errorf("%s: no peak RSS from %s", strings.Join(args, " "), TimeBinary)
	}
	if r.PeakKiB, err = strconv.ParseInt(lines[len(lines)-1], 10, 64); err != nil {
		return Run{}, fmt.Errorf("%s: peak RSS from %s: %w", strings.Join(args, " "), TimeBinary, err)
	}
	return r, nil
}

// Median is the middle value of xs (the mean of the two middle ones for an even count; 0 for
// none).
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Spread is the lowest and the highest of xs.
func Spread(xs []float64) (lo, hi float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	return slices.Min(xs), slices.Max(xs)
}

// Rotate returns xs rotated left by round, so that contenders alternate their order round
// after round and none always runs right after the same other one.
func Rotate[T any](xs []T, round int) []T {
	if len(xs) == 0 {
		return xs
	}
	k := round % len(xs)
	return append(slices.Clone(xs[k:]), xs[:k]...)
}

// SelfCPU is the CPU time this process has used (user and system).
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Meter is a measurement of work done in this process, from StartMeter to Run.
type Meter struct {
	cpu   CPUTimes
	start time.Time
	self  time.Duration
}

// StartMeter starts a measurement: the machine's and the services' CPU time (ReadCPU), the
// time and this process's CPU time.
func StartMeter() Meter {
	cpu := ReadCPU()
	return Meter{cpu: cpu, start: time.Now(), self: SelfCPU()}
}

// Run ends the measurement of records: its wall time, this process's CPU time and the
// machine's and the services' busy CPU time since StartMeter.
func (m Meter) Run(records int64) Run {
	r := Run{Records: records, WallS: time.Since(m.start).Seconds(), CPUS: (SelfCPU() - m.self).Seconds()}
	m.cpu.Fill(&r)
	return r
}

// userHZ is the unit of /proc/stat's times, USER_HZ, which Linux fixes at 100 on every
// architecture it reports to user space.
const userHZ = 100

// MachineCPU is the busy CPU time of the whole machine since boot, every core added: the
// first line of /proc/stat, every state but idle and iowait (guest time is inside user
// time). 0 where /proc/stat cannot be read.
func MachineCPU() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	var ticks int64
	for i, v := range f[1:9] { // user nice system idle iowait irq softirq steal
		if i == 3 || i == 4 {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ
}

// KcatVersion is kcat's version line ("kcat 1.7.1 (JSON, …, librdkafka 2.0.2 …)").
func KcatVersion() string {
	out, err := exec.Command("kcat", "-V").Output()
	if err != nil {
		return "kcat (version unknown)"
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Version "); ok {
			return "kcat " + v
		}
	}
	return "kcat (version unknown)"
}

// Suffix is a short random-enough name part for a benchmark's topics, groups and schemas
// (lower case, so that it suits a PostgreSQL identifier).
func Suffix() string {
	return fmt.Sprintf("%x", time.Now().UnixNano()&0xffffffffff)
}
