//go:build pprof

package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
)

// Built with -tags pprof, fieldwork writes a CPU profile of the whole command to
// $FIELDWORK_CPUPROFILE, a heap profile (allocations included) at its end to
// $FIELDWORK_MEMPROFILE and an execution trace to $FIELDWORK_TRACE, when set: `go tool pprof
// -top` then shows where a command spends its time, and `go tool trace -pprof=sync` (or sched)
// where its goroutines wait (docs/benchmarks.md).
func init() {
	profiled = func(run func() int) int {
		if path := os.Getenv("FIELDWORK_CPUPROFILE"); path != "" {
			f, err := os.Create(path)
			if err != nil {
				fmt.Fprintln(os.Stderr, "cpu profile:", err)
				return 1
			}
			defer f.Close()
			if err := pprof.StartCPUProfile(f); err != nil {
				fmt.Fprintln(os.Stderr, "cpu profile:", err)
				return 1
			}
			defer pprof.StopCPUProfile()
		}
		if path := os.Getenv("FIELDWORK_TRACE"); path != "" {
			f, err := os.Create(path)
			if err != nil {
				fmt.Fprintln(os.Stderr, "trace:", err)
				return 1
			}
			defer f.Close()
			if err := trace.Start(f); err != nil {
				fmt.Fprintln(os.Stderr, "trace:", err)
				return 1
			}
			defer trace.Stop()
		}
		code := run()
		if path := os.Getenv("FIELDWORK_MEMPROFILE"); path != "" {
			f, err := os.Create(path)
			if err == nil {
				runtime.GC()
				err = pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "memory profile:", err)
			}
		}
		return code
	}
}
