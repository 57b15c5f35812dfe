package version

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestResolve: the ldflags stamps win; unstamped, the toolchain's vcs settings and module
// version fill in.
func TestResolve(t *testing.T) {
	bi := &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"},
	}}
	got := resolve(bi)
	if got.Version != "v1.2.3" || got.Commit != "abc123" || got.Date != "2026-01-02T03:04:05Z" || !got.Modified {
		t.Errorf("unstamped: %+v", got)
	}
	if got := resolve(nil); got.Version != "dev" || got.Commit != "" || got.Date != "" {
		t.Errorf("no build info: %+v", got)
	}

	Version, Commit, Date = "v9.9.9", "def456", "2026-12-01T00:00:00Z"
	t.Cleanup(func() { Version, Commit, Date = "dev", "", "" })
	got = resolve(bi)
	if got.Version != "v9.9.9" || got.Commit != "def456" || got.Date != "2026-12-01T00:00:00Z" || got.Modified {
		t.Errorf("stamped: %+v", got)
	}
}

// TestMakeBuildStamps: the binary `make build` writes prints the checkout's commit, its git
// describe and a build date.
func TestMakeBuildStamps(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	gitPath, makePath := testenv.Tool(t, "git"), testenv.Tool(t, "make")
	git := func(args ...string) string {
		out, err := exec.Command(gitPath, append([]string{"-C", root}, args...)...).Output()
		if err != nil {
			testenv.Missing(t, fmt.Sprintf("not a git checkout (git %v: %v)", args, err), "the tests run in a git checkout")
		}
		return strings.TrimSpace(string(out))
	}
	commit, describe := git("rev-parse", "HEAD"), git("describe", "--tags", "--always", "--dirty")
	bin := filepath.Join(t.TempDir(), "fieldwork")
	build := exec.Command(makePath, "-s", "-C", root, "build", "BIN="+bin)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version", "-o", "json").Output()
	if err != nil {
		t.Fatalf("fieldwork version: %v", err)
	}
	var v versionInfo
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	if _, err := time.Parse(time.RFC3339, v.Date); err != nil || v.Commit != commit || v.Version != describe {
		t.Errorf("version %+v; want commit %s, version %s, an RFC 3339 date", v, commit, describe)
	}
}
