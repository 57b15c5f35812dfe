package golden

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestDiff(t *testing.T) {
	cases := []struct{ name, want, got, diff string }{
		{"same", "a\nb\n", "a\nb\n", ""},
		{"changed line", "a\nb\nc\n", "a\nB\nc\n", "  a\n- b\n+ B\n  c\n"},
		{"added at the end", "a\n", "a\nb\n", "  a\n+ b\n"},
		{"removed first", "a\nb\n", "b\n", "- a\n  b\n"},
		{"no final newline", "a\n", "a", "- a\n+ a⏎ (no newline at the end)\n"},
		{"far apart", "1\n2\n3\n4\n5\n6\n7\n8\n9\n", "x\n2\n3\n4\n5\n6\n7\n8\ny\n",
			"- 1\n+ x\n  2\n  3\n…\n  7\n  8\n- 9\n+ y\n"},
		{"from empty", "", "a\n", "+ a\n"},
	}
	for _, c := range cases {
		if got := Diff(c.want, c.got); got != c.diff {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.diff)
		}
	}
}

func TestDiffLarge(t *testing.T) {
	a := strings.Repeat("x\n", 3000)
	b := strings.Repeat("y\n", 3000)
	if d := Diff(a, b); strings.Count(d, "\n") != 6000 {
		t.Errorf("large diff has %d lines", strings.Count(d, "\n"))
	}
}

// recorder is a testing.TB that keeps failures instead of failing, so that Check's own
// failures can be checked.
type recorder struct {
	testing.TB
	failed bool
	msg    string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.failed = true
	r.msg = format
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = true
	r.msg = format
	runtime.Goexit()
}

// check runs Check with a recorder, in a goroutine of its own since Fatalf ends it.
func check(t *testing.T, path string, got []byte) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Check(r, path, got)
	}()
	<-done
	return r
}

func TestCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "out.txt")
	r := check(t, path, []byte("hello\n"))
	if !r.failed || !strings.Contains(r.msg, "-update creates it") {
		t.Fatalf("missing golden file: failed %v, %q", r.failed, r.msg)
	}

	*update = true
	Check(t, path, []byte("hello\n"))
	*update = false
	if b, err := os.ReadFile(path); err != nil || string(b) != "hello\n" {
		t.Fatalf("-update wrote %q, %v", b, err)
	}
	Check(t, path, []byte("hello\n"))

	r = check(t, path, []byte("bye\n"))
	if !r.failed || !strings.Contains(r.msg, "-update rewrites it") {
		t.Fatalf("difference: failed %v, %q", r.failed, r.msg)
	}
}

func TestCheckJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v.json")
	Write(t, path, []byte("{\n  \"a\": \"<b>\"\n}\n"))
	CheckJSON(t, path, map[string]string{"a": "<b>"})
}
