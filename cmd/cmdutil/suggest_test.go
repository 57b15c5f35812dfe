package cmdutil

import (
	"errors"
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

// TestValueHint: a value refused for want of one of a fixed set is answered with the choices
// close to it, whichever command refused it and however it said so.
func TestValueHint(t *testing.T) {
	for msg, want := range map[string]string{
		`--status "resolve": want some of pending, replayed, resolved, stale, unknown`:                              "\n\nDid you mean this?\n\tresolved\n",
		`--dlq-reason "Rejected": want one of malformed, unsupported, rejected, exhausted, parked or unknown`:       "\n\nDid you mean this?\n\trejected\n",
		`--group-by: cannot group by "reasn": want some of topic, original_topic, reason, error_class, group`:       "\n\nDid you mean this?\n\treason\n",
		`unknown SASL mechanism "PLAN" (want one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER, AWS_MSK_IAM)`: "\n\nDid you mean this?\n\tPLAIN\n",
		`--status "nothing-like-it": want some of pending, replayed`:                                                "",
		`topic "taks" does not exist`: "",
	} {
		if got := ValueHint(errors.New(msg)); got != want {
			t.Errorf("ValueHint(%s) = %q, want %q", msg, got, want)
		}
	}
}
