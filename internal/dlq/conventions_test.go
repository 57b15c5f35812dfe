package dlq

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/fieldwork/fieldwork/internal/testenv/golden"
)

// The conventions table in the documents is conventionsTable's, between these lines.
const (
	tableStart = "<!-- conventions table: generated from internal/dlq's declarations; go test ./internal/dlq -run TestConventionsTable -update -->\n"
	tableEnd   = "<!-- end of conventions table -->\n"
)

// TestConventionsTable checks the conventions table of README.md and docs/design.md against the
// declarations (-update rewrites it).
func TestConventionsTable(t *testing.T) {
	want := conventionsTable()
	for _, path := range []string{"../../README.md", "../../docs/design.md"} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		i, j := bytes.Index(b, []byte(tableStart)), bytes.Index(b, []byte(tableEnd))
		if i < 0 || j < i {
			t.Errorf("%s: no conventions table between %q and %q", path, tableStart, tableEnd)
			continue
		}
		got := string(b[i+len(tableStart) : j])
		if got == want {
			continue
		}
		if golden.Update() {
			out := append(append(append([]byte{}, b[:i+len(tableStart)]...), want...), b[j:]...)
			if err := os.WriteFile(path, out, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("%s: the conventions table differs from the declarations (go test ./internal/dlq -run TestConventionsTable -update)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// TestDeclarations checks what deriveConventions derived: every header a convention declares
// is that convention's (a replay strips it), and the headers declared for no convention are
// no convention's (a replay keeps them).
func TestDeclarations(t *testing.T) {
	for id, s := range headerSpecs {
		if got := conventionOfHeader(s.key); got != s.conv {
			t.Errorf("header %s (hdr %d) is declared for %q, but belongs to %q", s.key, id, s.conv, got)
		}
		if hdrByKey[s.key] != hdr(id) {
			t.Errorf("hdrByKey[%s] = %d, want %d", s.key, hdrByKey[s.key], id)
		}
		if s.key != strings.ToLower(s.key) {
			t.Errorf("header %s: key not lower case", s.key)
		}
	}
	for _, c := range conventions {
		if c.fromKey == nil && c.route[routeTopic] == nil {
			t.Errorf("%s: no header routes to the original topic", c.name)
		}
	}
}
