package handlers

import (
	"encoding/json"
	"testing"
)

var statusCases = []string{
	`{"status":"open"}`,
	` { "task_id" : "t-1", "status" : "done" , "labels":["a","b",{"status":"x"}], "n": 12.5e3, "ok": true, "nil": null } `,
	`{"status":"open","Status":"closed"}`,
	`{"STATUS":"blocked"}`,
	`{"status":null}`,
	`{"status":"a","status":null}`,
	`{"data":{"status":"nested"},"title":"say \"status\": \\"}`,
	`{}`,
	`{"status":"caf\u00e9"}`,
	`{"st\u0061tus":"escaped name"}`,
	`{"ſtatus":"folded"}`,
	`{"status":"ünïcode"}`,
	`{"status":12}`,
	`{"status":{"a":1}}`,
	`{"status":["open"]}`,
	`{"status":true}`,
	`"x"`,
	`[1]`,
	`{"status":"open"`,
	`{"status" "open"}`,
	`{"status":"open"} x`,
	`{"a":[1,2,{"b":"]}"}],"status":"after brackets in strings"}`,
	`{"statu":"short","statuss":"long","status":"right"}`,
}

// TestStatusOfAgreesWithUnmarshal: wherever statusOf answers, json.Unmarshal into taskData
// answers the same; the events of the sample stream take the fast path.
func TestStatusOfAgreesWithUnmarshal(t *testing.T) {
	for _, c := range statusCases {
		checkStatusOf(t, []byte(c))
	}
	if _, ok := statusOf([]byte(`{"task_id":"task-0001","title":"Fix \"login\"","status":"open","labels":["ops"],"due_date":"2025-03-25"}`)); !ok {
		t.Error("a plain task state does not take the fast path")
	}
}

func FuzzStatusOf(f *testing.F) {
	for _, c := range statusCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if json.Valid(b) { // the data the projection is given is valid JSON
			checkStatusOf(t, b)
		}
	})
}

func checkStatusOf(t *testing.T, b []byte) {
	t.Helper()
	got, ok := statusOf(b)
	if !ok {
		return
	}
	var want taskData
	if err := json.Unmarshal(b, &want); err != nil {
		t.Errorf("statusOf(%s) = %q, but json.Unmarshal fails: %v", b, got, err)
		return
	}
	if got != want.Status {
		t.Errorf("statusOf(%s) = %q, json.Unmarshal %q", b, got, want.Status)
	}
}

// BenchmarkTaskStatus compares statusOf with json.Unmarshal on a task's state as the sample
// stream writes it.
func BenchmarkTaskStatus(b *testing.B) {
	data := []byte(`{"task_id":"task-3157","title":"Test rate limiter","project":"platform","status":"open","priority":"medium","reporter":"jonas@example.com","due_date":"2025-03-25","labels":["customer","security","ops"],"updated_at":"2025-03-03T09:00:00.676Z"}`)
	b.Run("statusOf", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if s, ok := statusOf(data); !ok || s != "open" {
				b.Fatal(s, ok)
			}
		}
	})
	b.Run("json.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var d taskData
			if err := json.Unmarshal(data, &d); err != nil || d.Status != "open" {
				b.Fatal(d, err)
			}
		}
	})
}
