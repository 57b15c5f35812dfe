package inspect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"
	"testing"

	"github.com/fieldwork/fieldwork/internal/envelope"
	"github.com/fieldwork/fieldwork/internal/printable"
)

func TestAnnotateContinuity(t *testing.T) {
	type ev struct {
		id      string
		version int64 // -1: none
		payload uint64
	}
	cases := []struct {
		name   string
		events []ev
		want   string // continuity per event, space-separated
		counts ContinuityCounts
	}{
		{"in order", []ev{{"a", 1, 1}, {"b", 2, 2}, {"c", 3, 3}}, "ok ok ok", ContinuityCounts{OK: 3}},
		{"starts above one", []ev{{"a", 7, 1}, {"b", 8, 2}}, "ok ok", ContinuityCounts{OK: 2}},
		{"gap", []ev{{"a", 1, 1}, {"b", 4, 2}, {"c", 5, 3}}, "ok gap ok", ContinuityCounts{OK: 2, Gaps: 1}},
		{"redelivery", []ev{{"a", 1, 1}, {"b", 2, 2}, {"b", 2, 2}}, "ok ok duplicate", ContinuityCounts{OK: 2, Duplicates: 1}},
		{"old redelivery", []ev{{"a", 1, 1}, {"b", 2, 2}, {"a", 1, 1}}, "ok ok duplicate", ContinuityCounts{OK: 2, Duplicates: 1}},
		{"same id other payload", []ev{{"a", 1, 1}, {"a", 1, 9}}, "ok duplicate", ContinuityCounts{OK: 1, Duplicates: 1, ConflictingDuplicates: 1}},
		{"other event same version", []ev{{"a", 1, 1}, {"b", 1, 2}}, "ok duplicate", ContinuityCounts{OK: 1, Duplicates: 1, ConflictingDuplicates: 1}},
		{"regression", []ev{{"a", 1, 1}, {"c", 3, 3}, {"b", 2, 2}}, "ok gap regression", ContinuityCounts{OK: 1, Gaps: 1, Regressions: 1}},
		{"stale version re-emitted", []ev{{"a", 1, 1}, {"b", 2, 2}, {"c", 3, 3}, {"d", 2, 4}}, "ok ok ok regression", ContinuityCounts{OK: 3, Regressions: 1}},
		{"unversioned", []ev{{"a", -1, 1}, {"b", 1, 2}, {"c", -1, 3}, {"d", 2, 4}}, "unversioned ok unversioned ok", ContinuityCounts{OK: 2, Unversioned: 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			events := make([]AggregateEvent, len(tc.events))
			for i, e := range tc.events {
				events[i] = AggregateEvent{Partition: 0, Offset: int64(i), EventID: e.id, payload: e.payload}
				if e.version >= 0 {
					v := e.version
					events[i].Version = &v
				}
			}
			counts := annotateContinuity("tasks", events)
			var got []string
			for _, e := range events {
				got = append(got, e.Continuity)
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("continuity = %q, want %q", strings.Join(got, " "), tc.want)
			}
			if counts != tc.counts {
				t.Errorf("counts = %+v, want %+v", counts, tc.counts)
			}
		})
	}
}

func TestGapSaysFromAndTo(t *testing.T) {
	v1, v5 := int64(1), int64(5)
	events := []AggregateEvent{{EventID: "a", Version: &v1}, {EventID: "b", Offset: 1, Version: &v5}}
	annotateContinuity("tasks", events)
	e := events[1]
	if e.GapFrom == nil || *e.GapFrom != 1 || e.GapTo == nil || *e.GapTo != 5 || e.Note != "versions 2..4 missing" {
		t.Fatalf("gap = from %v to %v note %q", e.GapFrom, e.GapTo, e.Note)
	}
}

// TestNotesSpellAddresses pins that a note names the related record by its full address,
// topic/partition/offset, as every message does.
func TestNotesSpellAddresses(t *testing.T) {
	v1, v2 := int64(1), int64(2)
	events := []AggregateEvent{
		{EventID: "a", Partition: 2, Offset: 7, Version: &v1, payload: 1},
		{EventID: "b", Partition: 2, Offset: 8, Version: &v2, payload: 2},
		{EventID: "a", Partition: 2, Offset: 9, Version: &v1, payload: 1},
	}
	annotateContinuity("tasks", events)
	if want := "version 1 again: redelivery of the event at tasks/2/7"; events[2].Note != want {
		t.Fatalf("note %q, want %q", events[2].Note, want)
	}
}

// TestRecordReportJSON: a record's bytes are text in JSON only when they are printable; a
// value that is UTF-8 but carries control bytes (a Confluent-framed value) is given exactly
// in value_base64, as dlq show gives it.
func TestRecordReportJSON(t *testing.T) {
	framed := []byte("\x00\x00\x00\x00\x07\f{}")
	rep := RecordReport{Topic: "t", Key: []byte("k"), Value: framed,
		Headers: []envelope.Header{{Key: "\x1b]0;x\a", Value: []byte("ok")}, {Key: "null"}}}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Key         *string            `json:"key"`
		KeyBase64   []byte             `json:"key_base64"`
		Value       *string            `json:"value"`
		ValueBase64 []byte             `json:"value_base64"`
		Headers     []printable.Header `json:"headers"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Key == nil || *got.Key != "k" || got.KeyBase64 != nil {
		t.Errorf("key: %s", b)
	}
	if !bytes.Equal(got.ValueBase64, framed) {
		t.Errorf("a framed value is not given exactly: %s", b)
	}
	if len(got.Headers) != 2 || string(got.Headers[0].KeyBase64) != "\x1b]0;x\a" || got.Headers[1].Value != nil {
		t.Errorf("headers: %s", b)
	}
	if empty, _ := json.Marshal(RecordReport{}); !bytes.Contains(empty, []byte(`"key":null,"headers":[],"format":"","event":null,"malformed":null,"value":null`)) {
		t.Errorf("nothing: %s", empty)
	}
}

func TestHash64SeparatesParts(t *testing.T) {
	if hash64([]byte("ab"), []byte("c")) == hash64([]byte("a"), []byte("bc")) {
		t.Error("part boundaries do not count")
	}
	if hash64([]byte(fmt.Sprint(1))) != hash64([]byte("1")) {
		t.Error("hash is not deterministic")
	}
}

// The fingerprints are FNV-1a as hash/fnv computes it, each part followed by a NUL: a spill
// file or a payload fingerprint means the same whichever computes it.
func TestHash64IsFNV1a(t *testing.T) {
	for _, parts := range [][]string{{}, {""}, {"evt-1"}, {"task.updated", "", "task-7", "3", `{"a":1}`}} {
		want := fnv.New64a()
		var got fnv64 = newFNV()
		var bs [][]byte
		for _, p := range parts {
			want.Write([]byte(p))
			want.Write([]byte{0})
			got = got.addString(p)
			bs = append(bs, []byte(p))
		}
		if uint64(got) != want.Sum64() || hash64(bs...) != want.Sum64() {
			t.Errorf("%q: %x and %x, hash/fnv %x", parts, uint64(got), hash64(bs...), want.Sum64())
		}
	}
}
