package cmd

import (
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/internal/output"
)

// Version is set at build time with -ldflags "-X github.com/fieldwork/fieldwork/cmd.Version=…".
var Version = "dev"

type versionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

// NewCmdVersion prints the build's version.
func NewCmdVersion(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print fieldwork's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := f.Printer()
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
		},
	}
}
