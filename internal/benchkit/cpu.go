package benchkit

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// CPUTimes are busy CPU times since boot: the whole machine's (MachineCPU) and, inside it,
// those of the two services every benchmark shares the cores with, PostgreSQL and the Kafka
// broker. A run's share is the difference of two readings (Fill).
type CPUTimes struct {
	Machine, Postgres, Broker time.Duration
}

// ReadCPU reads the machine's busy CPU time and the services' (ServiceCPU).
func ReadCPU() CPUTimes {
	pg, broker := ServiceCPU()
	return CPUTimes{Machine: MachineCPU(), Postgres: pg, Broker: broker}
}

// Fill sets r's machine and services' CPU seconds to what they spent from c, read when the
// run started, to now.
func (c CPUTimes) Fill(r *Run) {
	now := ReadCPU()
	r.MachineS = (now.Machine - c.Machine).Seconds()
	r.PostgresS = max(0, (now.Postgres - c.Postgres).Seconds())
	r.BrokerS = max(0, (now.Broker - c.Broker).Seconds())
}

// ServiceCPU is the CPU time (user and system) that PostgreSQL's processes and the Kafka
// broker's have used, from /proc: every process named postgres (the postmasters of both
// instances scripts/services.sh starts, their backends and workers), with what their exited
// children used (a backend that exits is counted in its postmaster's once it is reaped), and
// the Java process that runs kafka.Kafka. Zeros where /proc cannot be read.
func ServiceCPU() (postgres, broker time.Duration) {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // exited since the listing
		}
		name, ticks, ok := procTicks(b)
		if !ok {
			continue
		}
		switch {
		case name == "postgres":
			postgres += ticks
		case name == "java" && isBroker(filepath.Dir(path)):
			broker += ticks
		}
	}
	return postgres * time.Second / userHZ, broker * time.Second / userHZ
}

// procTicks reads a /proc/PID/stat line: the process's name and its utime, stime, cutime and
// cstime added (clock ticks, USER_HZ). The name is inside the first ( and the last ), and may
// hold anything.
func procTicks(stat []byte) (name string, ticks time.Duration, ok bool) {
	open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if open < 0 || end < open {
		return "", 0, false
	}
	// After the name: state (field 3) … utime, stime, cutime, cstime (fields 14 to 17).
	f := strings.Fields(string(stat[end+1:]))
	if len(f) < 15 {
		return "", 0, false
	}
	for _, v := range f[11:15] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return "", 0, false
		}
		ticks += time.Duration(n)
	}
	return string(stat[open+1 : end]), ticks, true
}

// isBroker says whether the Java process whose /proc directory is dir runs the Kafka broker
// (its main class kafka.Kafka), not another Java program (the schema registry, a perf test).
func isBroker(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cmdline"))
	if err != nil {
		return false
	}
	for arg := range bytes.SplitSeq(b, []byte{0}) {
		if string(arg) == "kafka.Kafka" {
			return true
		}
	}
	return false
}
