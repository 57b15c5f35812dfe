package dlq

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestFingerprint: messages that differ only in ids, numbers, UUIDs, hex ids and quoted values
// share a fingerprint; another class or another wording does not.
func TestFingerprint(t *testing.T) {
	same := []DeadLetter{
		{ErrorClass: "http_422", ErrorMessage: `order 1234 rejected: customer "alice@example.com" has no card (request 7f3e9a2b-1c4d-4e5f-8a9b-0c1d2e3f4a5b)`},
		{ErrorClass: "http_422", ErrorMessage: `order 98 rejected: customer "bob" has no card (request 00000000-0000-4000-8000-000000000001)`},
		{ErrorClass: "http_422", ErrorMessage: `order 5   rejected:  customer 'carol' has no card (request 123e4567-e89b-12d3-a456-426614174000)`},
	}
	want := FingerprintOf(same[0])
	for _, d := range same[1:] {
		if got := FingerprintOf(d); got != want {
			t.Errorf("FingerprintOf(%q) = %+v, want %+v", d.ErrorMessage, got, want)
		}
	}
	if want.Cause != `http_422: order <n> rejected: customer <q> has no card (request <uuid>)` {
		t.Errorf("cause %q", want.Cause)
	}
	if !ValidFingerprint(want.ID) {
		t.Errorf("ID %q is not a valid fingerprint", want.ID)
	}
	for _, d := range []DeadLetter{
		{ErrorClass: "http_500", ErrorMessage: same[0].ErrorMessage},
		{ErrorClass: "http_422", ErrorMessage: `order 1234 rejected: customer "alice" is blocked`},
	} {
		if FingerprintOf(d).ID == want.ID {
			t.Errorf("%+v shares the fingerprint of %+v", d, same[0])
		}
	}
	if a, b := NormaliseError("tasks/0/14: checksum deadbeef12 at 0x1f2e3d4c5b"), "tasks/<n>/<n>: checksum <hex> at <hex>"; a != b {
		t.Errorf("NormaliseError = %q, want %q", a, b)
	}
	if a := NormaliseError("unexpected end of input at byte 205"); a != "unexpected end of input at byte <n>" {
		t.Errorf("NormaliseError = %q", a)
	}
	for _, bad := range []string{"", "ABCDEF123456", "12345", "0123456789abc", "zzzzzzzzzzzz"} {
		if ValidFingerprint(bad) {
			t.Errorf("ValidFingerprint(%q)", bad)
		}
	}
	if byID := (Filter{Fingerprint: want.ID}); !byID.Match(&same[2]) || byID.Match(&DeadLetter{ErrorMessage: "other"}) {
		t.Error("Filter.Fingerprint")
	}
}

// TestStatsByFingerprint: grouped by fingerprint, a group has its cause, the original topics
// it occurred on and an example address, in the table's fields and in JSON.
func TestStatsByFingerprint(t *testing.T) {
	s, err := NewStats([]StatsKey{ByFingerprint}, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, d := range []DeadLetter{
		{Topic: "a.dlq", Offset: 3, OriginalTopic: "orders", ErrorMessage: "order 1 not found", Timestamp: at},
		{Topic: "b.dlq", Offset: 9, OriginalTopic: "billing", ErrorMessage: "order 22 not found", Timestamp: at.Add(time.Hour)},
		{Topic: "a.dlq", Offset: 4, OriginalTopic: "orders", ErrorMessage: "timeout after 30s", Timestamp: at},
	} {
		s.Add(&d)
	}
	res := s.Result()
	if len(res) != 2 {
		t.Fatalf("%d groups, want 2: %+v", len(res), res)
	}
	g := res[0]
	if g.Count != 2 || g.Cause != "order <n> not found" || strings.Join(g.Topics, ",") != "billing,orders" || g.Example.String() != "a.dlq/0/3" ||
		!g.Oldest.Equal(at) || !g.Newest.Equal(at.Add(time.Hour)) {
		t.Errorf("group %+v", g)
	}
	b, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), `{"fingerprint":"`+g.Fingerprint+`","cause":"order \u003cn\u003e not found","topics":["billing","orders"],"example":{"topic":"a.dlq","partition":0,"offset":3},"count":2,`) {
		t.Errorf("JSON %s", b)
	}
}
