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

// Version is set at build time with -ldflags "-X github.com/fieldwork/fieldwork/cmd/version.Version=…".
var Version = "dev"

type versionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
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
		Short: "Print fieldwork's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmdutil.Run(cmd, opts, runF, versionRun)
		},
	}
}

func versionRun(_ context.Context, opts *VersionOptions) error {
	p, err := opts.Printer()
	if err != nil {
		return err
	}
	v := versionInfo{Version: Version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				v.Commit = s.Value
			}
		}
		if v.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v.Version = bi.Main.Version
		}
	}
	return p.Object(v, []output.Section{{Fields: [][2]string{
		{"version", v.Version}, {"commit", v.Commit}, {"go", v.GoVersion}, {"platform", v.Platform},
	}}})
}
