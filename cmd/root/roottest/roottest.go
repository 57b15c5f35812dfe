// Package roottest runs fieldwork's whole command tree in a test, on test streams, and maps
// its error to an exit code as Main does.
package roottest

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/cmd/root"
	"github.com/fieldwork/fieldwork/internal/output"
)

// Result is what a run printed and its exit code.
type Result struct {
	Stdout, Stderr string
	Code           int
	Elapsed        time.Duration
}

// Run runs fieldwork's root command with args on test streams (not terminals) and an
// environment of env only (FIELDWORK_CONFIG, unless env names one, is a file that does not
// exist), bounded by two minutes.
func Run(t *testing.T, env map[string]string, args ...string) Result {
	t.Helper()
	s, _, out, errOut := output.Test()
	if _, ok := env["FIELDWORK_CONFIG"]; !ok {
		env["FIELDWORK_CONFIG"] = filepath.Join(t.TempDir(), "absent.yaml")
	}
	f := &cmdutil.Factory{Streams: s, Getenv: func(k string) string { return env[k] }}
	cmd := root.NewCmdRoot(f)
	cmd.SetArgs(args)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	ran, err := cmd.ExecuteContextC(ctx)
	code := root.ExitCode(ctx, f, ran, err)
	return Result{Stdout: out.String(), Stderr: errOut.String(), Code: code, Elapsed: time.Since(start)}
}
