package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var built struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// ModuleRoot returns the directory of the module's go.mod, found upwards from the test's
// working directory (its package's directory).
func ModuleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// Fieldwork returns the path of the fieldwork binary, built from the module root (the root
// package main) the first time a test of the process asks; RemoveFieldwork deletes it.
func Fieldwork(t testing.TB) string {
	t.Helper()
	root := ModuleRoot(t)
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "fieldwork-bin-")
		if built.err != nil {
			return
		}
		built.path = filepath.Join(built.dir, "fieldwork")
		cmd := exec.Command("go", "build", "-o", built.path, ".")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build -o %s . in %s: %v\n%s", built.path, root, err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// RemoveFieldwork deletes the binary Fieldwork built, if it did (for a TestMain).
func RemoveFieldwork() {
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
}

// Main is the TestMain of a package whose tests run the built binary: it runs the tests,
// deletes the binary Fieldwork built, and exits with the tests' code.
func Main(m *testing.M) {
	code := m.Run()
	RemoveFieldwork()
	os.Exit(code)
}

// CleanEnviron is the environment of a fieldwork command run by a test: the test's, less
// every FIELDWORK_* variable, its home and its colour and terminal settings, with home as the
// home and FIELDWORK_CONFIG a file there that does not exist (so no configuration of the
// caller's applies), then extra.
func CleanEnviron(home string, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "FIELDWORK_"), name == "HOME", name == "XDG_CONFIG_HOME", name == "NO_COLOR", name == "TERM":
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "FIELDWORK_CONFIG="+filepath.Join(home, "absent.yaml"), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"))
	return append(env, extra...)
}
