// Package version is `fieldwork version`.
package version

import (
	"context"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/output"
)

// The build's stamps, set by `make build` (and `make -s ldflags` for go build or go install)
// with -ldflags "-X github.com/fieldwork/fieldwork/cmd/version.Version=… -X ….Commit=… -X ….Date=…".
// Unstamped, `fieldwork version` falls back to what the Go toolchain recorded (buildInfo).
var (
	// Version is the release, `git describe --tags --always --dirty` in make build.
	Version = "dev"
	// Commit is the full commit hash the binary was built from.
	Commit = ""
	// Date is when it was built (make build) or committed (the fallback), RFC 3339 UTC.
	Date = ""
)

type versionInfo struct {
	Version string `json:"version"`
	Commit  string `json:"commit,omitempty"`
	Date    string `json:"date,omitempty"`
	// Modified: the work tree had uncommitted changes (known only from the toolchain's record).
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

// VersionOptions are the inputs of `fieldwork version`.
type VersionOptions struct {
	Printer func() (*output.Printer, error)
}

// NewCmdVersion prints the build's version. runF, when set, replaces the run (for tests).
func NewCmdVersion(f *cmdutil.Factory, runF func(context.Context, *VersionOptions) error) *cobra.Command {
	opts := &VersionOptions{Printer: f.Printer}
	return &cobra.Command{
		Use:   "version",
		Short: "Print fieldwork's version, commit and build date",
		Long: `Print fieldwork's version, the commit it was built from and when.

make build stamps all three. A binary built otherwise (go build, go install, go run) shows what
the Go toolchain recorded: the module version for go install …@version, and the commit, its
time and whether the tree was modified when built inside a git checkout.`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmdutil.Run(cmd, opts, runF, versionRun)
		},
	}
}

// resolve is the version shown: the ldflags stamps, each missing one filled from bi (nil
// when the binary carries no build information).
func resolve(bi *debug.BuildInfo) versionInfo {
	v := versionInfo{Version: Version, Commit: Commit, Date: Date, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi == nil {
		return v
	}
	stamped := v.Commit != ""
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			if v.Commit == "" {
				v.Commit = s.Value
			}
		case "vcs.time":
			if v.Date == "" {
				v.Date = s.Value
			}
		case "vcs.modified":
			v.Modified = !stamped && s.Value == "true"
		}
	}
	if v.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v.Version = bi.Main.Version
	}
	return v
}

func versionRun(_ context.Context, opts *VersionOptions) error {
	p, err := opts.Printer()
	if err != nil {
		return err
	}
	var bi *debug.BuildInfo
	if b, ok := debug.ReadBuildInfo(); ok {
		bi = b
	}
	v := resolve(bi)
	fields := [][2]string{{"version", v.Version}, {"commit", v.Commit}, {"date", v.Date}}
	if v.Modified {
		fields = append(fields, [2]string{"modified", "true"})
	}
	fields = append(fields, [2]string{"go", v.GoVersion}, [2]string{"platform", v.Platform})
	return p.Object(v, []output.Section{{Fields: fields}})
}
