// Package golden compares what a test produces with a file under testdata, and rewrites the
// file when the test runs with -update:
//
//	go test ./internal/dlq -run TestParseGolden -update
//
// Importing the package defines the -update flag, once for the test binary; a package whose
// tests use it defines no flag of its own. It lives apart from testenv so that a package can
// use testenv's services without taking the flag.
package golden

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files (and testscript expectations) from what the tests produce")

// Update reports whether this run rewrites the golden files (-update). A test that keeps its
// expectations in a file of its own shape (cases beside their inputs) rewrites that file
// when it is set; a testscript run passes it as Params.UpdateScripts.
func Update() bool { return *update }

// Check compares got with the file at path. With -update it writes got there instead (and
// the directories on the way), so that the change shows in the diff of the commit. A missing
// file or a difference fails the test with a diff of the lines and the command that rewrites
// the file.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		Write(t, path, got)
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run '%s' -update creates it)", err, rerun(t))
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from what the test produced (go test -run '%s' -update rewrites it):\n%s",
			path, rerun(t), Diff(string(want), string(got)))
	}
}

// CheckJSON is Check of v as indented JSON (two spaces, a final newline), without the
// escaping of <, > and & that fieldwork's output does not do either.
func CheckJSON(t testing.TB, path string, v any) {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatalf("marshal %s: %v", path, err)
	}
	Check(t, path, b.Bytes())
}

// Write writes data to path, creating its directory, and fails the test if it cannot.
func Write(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// rerun is the -run pattern of the top-level test.
func rerun(t testing.TB) string {
	name, _, _ := strings.Cut(t.Name(), "/")
	return "^" + name + "$"
}

// Diff shows how got differs from want, line by line: "-" for a line only in want, "+" for
// one only in got, two lines of context around each change.
func Diff(want, got string) string {
	ops := diffLines(lines(want), lines(got))
	const context = 2
	var out strings.Builder
	last := -1 // index in ops of the last line written
	for i, op := range ops {
		if op.kind == ' ' {
			continue
		}
		from := max(i-context, last+1)
		if last >= 0 && from > last+1 {
			out.WriteString("…\n")
		}
		for j := from; j < i; j++ {
			writeOp(&out, ops[j])
		}
		writeOp(&out, op)
		last = i
		for j := i + 1; j < len(ops) && j <= i+context && ops[j].kind == ' '; j++ {
			writeOp(&out, ops[j])
			last = j
		}
	}
	return out.String()
}

// lines splits s after each newline; a last line without one is kept as it is.
func lines(s string) []string {
	l := strings.SplitAfter(s, "\n")
	if l[len(l)-1] == "" {
		l = l[:len(l)-1]
	}
	return l
}

type diffOp struct {
	kind byte // ' ', '-' or '+'
	line string
}

func writeOp(b *strings.Builder, op diffOp) {
	line := strings.TrimSuffix(op.line, "\n")
	if !strings.HasSuffix(op.line, "\n") {
		line += "⏎ (no newline at the end)"
	}
	fmt.Fprintf(b, "%c %s\n", op.kind, line)
}

// diffLines is the longest-common-subsequence diff of a and b. Golden files are small; past
// a few thousand lines on each side it gives up on the alignment and shows the two texts
// from their first difference on.
func diffLines(a, b []string) []diffOp {
	var ops []diffOp
	for len(a) > 0 && len(b) > 0 && a[0] == b[0] {
		ops = append(ops, diffOp{' ', a[0]})
		a, b = a[1:], b[1:]
	}
	if len(a)*len(b) > 4_000_000 {
		for _, l := range a {
			ops = append(ops, diffOp{'-', l})
		}
		for _, l := range b {
			ops = append(ops, diffOp{'+', l})
		}
		return ops
	}
	// lcs[i][j] is the length of the longest common subsequence of a[i:] and b[j:].
	lcs := make([][]int32, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			ops = append(ops, diffOp{' ', a[i]})
			i++
			j++
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, diffOp{'-', a[i]})
			i++
		default:
			ops = append(ops, diffOp{'+', b[j]})
			j++
		}
	}
	return ops
}
