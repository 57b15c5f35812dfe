package replay

import (
	"slices"
	"strings"
	"testing"

	"github.com/fieldwork/fieldwork/internal/fwerr"
)

// TestReadFileSelection: addresses, event ids and dlq list JSON lines, deduplicated, with
// comments and the truncation mark; a bad address, two topics or nothing at all are usage
// errors naming the line.
func TestReadFileSelection(t *testing.T) {
	in := strings.Join([]string{
		"# triaged for ticket 42",
		"tasks.dlq/0/3",
		`{"topic":"tasks.dlq","partition":1,"offset":7,"event_id":"e-7","status":"pending"}`,
		"",
		"  evt-9  ",
		"tasks.dlq/0/3",
		"evt-9",
		`{"_truncated":{"limit":2,"written":2}}`,
	}, "\n")
	fs, err := ReadFileSelection(strings.NewReader(in), "f")
	if err != nil {
		t.Fatal(err)
	}
	if fs.Topic != "tasks.dlq" || !slices.Equal(fs.Addresses, []string{"tasks.dlq/0/3", "tasks.dlq/1/7"}) || !slices.Equal(fs.EventIDs, []string{"evt-9"}) || !fs.Truncated {
		t.Fatalf("%+v", fs)
	}
	for _, tc := range []struct{ in, want string }{
		{"tasks.dlq/0/x", "f:1:"},
		{"a/0/1\nb/0/2", "f:2: b/0/2 is in b"},
		{`{"topic":"a"}`, "f:1: a JSON line needs"},
		{"{not json", "f:1: not a JSON object"},
		{"# nothing\n\n", "names no record"},
		{"a/0/1\n" + strings.Repeat("x", maxSelectionLine+1), "f:2: longer than 64 MiB"},
	} {
		_, err := ReadFileSelection(strings.NewReader(tc.in), "f")
		if fwerr.KindOf(err) != fwerr.KindUsage || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want a usage error with %q", tc.in, err, tc.want)
		}
	}
}
