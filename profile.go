//go:build pprof

package main

import (
	"fmt"
	"io"
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
		for _, w := range []struct {
			env, what string
			start     func(io.Writer) error
			stop      func()
		}{
			{"FIELDWORK_CPUPROFILE", "cpu profile", pprof.StartCPUProfile, pprof.StopCPUProfile},
			{"FIELDWORK_TRACE", "trace", trace.Start, trace.Stop},
		} {
			path := os.Getenv(w.env)
			if path == "" {
				continue
			}
			f, err := os.Create(path)
			if err == nil {
				if err = w.start(f); err != nil {
					f.Close()
				}
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, w.what+":", err)
				return 1
			}
			defer f.Close()
			defer w.stop()
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
