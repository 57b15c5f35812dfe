package dlq

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fieldwork/fieldwork/internal/fwerr"
)

func TestFilterMatch(t *testing.T) {
	at := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	d := DeadLetter{
		Timestamp: at, OriginalTopic: "orders", Group: "billing", Reason: ReasonRejected,
		ErrorClass: "java.lang.IllegalStateException", ErrorMessage: "card declined",
		EventID: "evt-1", Key: []byte("order-\xff"), RootCause: "java.net.SocketTimeoutException: Read timed out",
	}
	none := d
	none.Reason = ""
	tests := []struct {
		name string
		f    Filter
		d    DeadLetter
		want bool
	}{
		{"zero filter", Filter{}, d, true},
		{"since equal", Filter{Since: at}, d, true},
		{"since after", Filter{Since: at.Add(time.Millisecond)}, d, false},
		{"until equal is excluded", Filter{Until: at}, d, false},
		{"until after", Filter{Until: at.Add(time.Millisecond)}, d, true},
		{"reason in list", Filter{Reasons: []string{ReasonMalformed, ReasonRejected}}, d, true},
		{"reason not in list", Filter{Reasons: []string{ReasonMalformed}}, d, false},
		{"unknown reason selects none", Filter{Reasons: []string{ReasonUnknown}}, none, true},
		{"unknown reason not a known one", Filter{Reasons: []string{ReasonUnknown}}, d, false},
		{"error regexp on message", Filter{ErrorRegexp: regexp.MustCompile(`declin`)}, d, true},
		{"error regexp on class", Filter{ErrorRegexp: regexp.MustCompile(`IllegalState`)}, d, true},
		{"error regexp on root cause", Filter{ErrorRegexp: regexp.MustCompile(`SocketTimeout`)}, d, true},
		{"error regexp no match", Filter{ErrorRegexp: regexp.MustCompile(`^timeout`)}, d, false},
		{"original topic", Filter{OriginalTopic: "orders"}, d, true},
		{"other original topic", Filter{OriginalTopic: "order"}, d, false},
		{"group", Filter{Group: "billing"}, d, true},
		{"other group", Filter{Group: "Billing"}, d, false},
		{"event id", Filter{EventID: "evt-1"}, d, true},
		{"other event id", Filter{EventID: "evt-2"}, d, false},
		{"key bytes", Filter{Key: []byte("order-\xff")}, d, true},
		{"other key", Filter{Key: []byte("order-")}, d, false},
		{"empty key selects no key", Filter{Key: []byte{}}, DeadLetter{}, true},
		{"all set, all match", Filter{Since: at, Until: at.Add(time.Hour), Reasons: []string{ReasonRejected},
			ErrorRegexp: regexp.MustCompile(`card`), OriginalTopic: "orders", Group: "billing", EventID: "evt-1", Key: d.Key}, d, true},
		{"all set, one fails", Filter{Since: at, Until: at.Add(time.Hour), Reasons: []string{ReasonRejected},
			ErrorRegexp: regexp.MustCompile(`card`), OriginalTopic: "orders", Group: "billing", EventID: "evt-2", Key: d.Key}, d, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.f.Match(&tt.d); got != tt.want {
				t.Fatalf("Match = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestFilterSpecCompile: the one check of the dead-letter filters as written, for dlq list,
// dlq stats, dlq show and replay (and a resumed replay's journaled selection) alike.
func TestFilterSpecCompile(t *testing.T) {
	for _, tc := range []struct {
		spec FilterSpec
		err  string
	}{
		{FilterSpec{}, ""},
		{FilterSpec{Reasons: []string{" rejected", "", ReasonUnknown}, Error: "time(out)?", OriginalTopic: "orders", SchemaID: 7, Fingerprint: "0123456789ab"}, ""},
		{FilterSpec{Reasons: []string{"poison"}}, `--dlq-reason "poison": want one of malformed, unsupported, rejected, exhausted, parked or unknown`},
		{FilterSpec{Error: "("}, `--error "(" is not a regular expression`},
		{FilterSpec{OriginalTopic: "bad topic"}, `--original-topic "bad topic": a topic name holds only ASCII letters`},
		{FilterSpec{SchemaID: -1}, "--schema-id -1: a schema registry id is 1 or more"},
		{FilterSpec{Fingerprint: "xyz"}, `--fingerprint "xyz": a fingerprint is 12 hexadecimal digits`},
	} {
		f, err := tc.spec.Compile()
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%+v: %v", tc.spec, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || fwerr.KindOf(err) != fwerr.KindUsage):
			t.Errorf("%+v: error %v; want a usage error saying %q", tc.spec, err, tc.err)
		case tc.err == "" && tc.spec.Error != "" && (f.ErrorRegexp == nil || !f.ErrorRegexp.MatchString("timeout")):
			t.Errorf("%+v: the error pattern was not compiled: %+v", tc.spec, f)
		case tc.err == "" && tc.spec.Reasons != nil && fmt.Sprint(f.Reasons) != "[rejected unknown]":
			t.Errorf("%+v: reasons %q, want the given ones trimmed, blanks dropped", tc.spec, f.Reasons)
		}
	}
}

// TestFilterSelection: a filter's scan reads its window through the one selection type, and
// nothing else narrows it.
func TestFilterSelection(t *testing.T) {
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	sel := (&Filter{Since: at, Until: at.Add(time.Hour), Group: "g"}).Selection()
	if !sel.Since.Equal(at) || !sel.Until.Equal(at.Add(time.Hour)) || sel.Ranged() {
		t.Errorf("selection %+v", sel)
	}
	if (&Filter{Group: "g"}).Selection().Narrowed() {
		t.Error("a filter without a window narrows its scan")
	}
}
