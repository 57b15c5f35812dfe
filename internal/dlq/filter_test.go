package dlq

import (
	"regexp"
	"testing"
	"time"
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
			if got := tt.f.Match(tt.d); got != tt.want {
				t.Fatalf("Match = %v, want %v", got, tt.want)
			}
		})
	}
}
