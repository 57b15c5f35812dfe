package cmdutil

import (
	"slices"
	"testing"
)

func TestSuggestions(t *testing.T) {
	for _, c := range []struct {
		typed string
		cands []string
		want  []string
	}{
		{"lsit", []string{"list", "show", "stats"}, []string{"list"}},
		{"valdiate", []string{"topic", "record", "aggregate", "validate"}, []string{"validate"}},
		{"form", []string{"from", "format", "force", "offset"}, []string{"from", "format", "force"}},
		{"LIMT", []string{"limit"}, []string{"limit"}},
		{"sta", []string{"stats", "show"}, []string{"stats"}},
		{"nothing-like-it", []string{"list", "show"}, []string{}},
	} {
		if got := Suggestions(c.typed, c.cands); !slices.Equal(got, c.want) {
			t.Errorf("Suggestions(%q) = %q, want %q", c.typed, got, c.want)
		}
	}
}
