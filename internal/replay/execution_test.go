package replay

import (
	"encoding/json"
	"github.com/fieldwork/fieldwork/internal/action"
	"testing"
	"time"
)

// TestExecutionOfAResume: a resumed run executes as it was journaled (its rate, its
// batching) unless --rate is given, which then wins; a run journaled without its execution
// (an earlier version) resumes with the defaults and says its rate is unknown. What the
// report says is what the send is configured with.
func TestExecutionOfAResume(t *testing.T) {
	journaledAs := &Execution{Rate: 5000, MaxBuffered: 1000, FlushRecords: 100, FlushIntervalMS: 250}
	for _, tc := range []struct {
		name      string
		plan      *Plan
		o         FlowOptions
		rate      float64
		rateFrom  string
		batch     int
		batchFrom string
	}{
		{"a new run at --rate", &Plan{}, FlowOptions{Rate: 5000, RateGiven: true}, 5000, FromFlag, DefaultMaxBuffered, FromDefault},
		{"a new run without", &Plan{}, FlowOptions{}, 0, FromDefault, DefaultMaxBuffered, FromDefault},
		{"a resume", &Plan{Resume: &Resume{Execution: journaledAs}}, FlowOptions{}, 5000, FromRun, 1000, FromRun},
		{"a resume at --rate 2000", &Plan{Resume: &Resume{Execution: journaledAs}}, FlowOptions{Rate: 2000, RateGiven: true}, 2000, FromFlag, 1000, FromRun},
		{"a resume at --rate 0", &Plan{Resume: &Resume{Execution: journaledAs}}, FlowOptions{RateGiven: true}, 0, FromFlag, 1000, FromRun},
		{"a resume of an older run", &Plan{Resume: &Resume{}}, FlowOptions{}, 0, FromUnknown, DefaultMaxBuffered, FromUnknown},
	} {
		f := &flow{o: tc.o, single: true}
		f.ex, f.exRep = tc.o.execution(tc.plan)
		rep := f.exRep
		eo := f.exec(&action.Env{}, -1)
		if eo.Rate != tc.rate || eo.MaxBuffered != tc.batch || rep.RateFrom != tc.rateFrom || rep.BatchFrom != tc.batchFrom || rep.MaxBuffered != tc.batch {
			t.Errorf("%s: sends at %g (%d buffered), says %+v; want %g from %s, %d from %s", tc.name, eo.Rate, eo.MaxBuffered, rep, tc.rate, tc.rateFrom, tc.batch, tc.batchFrom)
		}
		if (rep.Rate == nil) != (tc.rate == 0) || (rep.Rate != nil && *rep.Rate != tc.rate) {
			t.Errorf("%s: report rate %v, want %g (null for no cap)", tc.name, rep.Rate, tc.rate)
		}
		if tc.batchFrom == FromRun && eo.FlushInterval != 250*time.Millisecond {
			t.Errorf("%s: flush interval %s, want the run's 250ms", tc.name, eo.FlushInterval)
		}
	}
}

// TestJournaledExecution: the journal's selection holds the spec and, as its "execution"
// object, how the run executes; read back, both come back.
func TestJournaledExecution(t *testing.T) {
	s := Spec{From: "tasks.dlq", ToPartition: PartitionKey, Partitioner: "fnv1a", ForGroup: "billing", StopOnRedeadletter: 3}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	text := marshalRun(&s, executionOf(ExecOptions{Rate: 5000}), nil)
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(text), &raw); err != nil || string(raw["execution"]) != `{"rate":5000,"max_buffered":30000,"flush_records":2000,"flush_interval_ms":1000}` {
		t.Fatalf("journaled %s (%v)", text, err)
	}
	back, ex, _, err := unmarshalSpec(text)
	if err != nil || ex == nil || ex.Rate != 5000 || back.marshal() != s.marshal() {
		t.Fatalf("read back: %+v %+v %v", back, ex, err)
	}
	// No cap is null, not 0, and reads back as no cap.
	text = marshalRun(&s, executionOf(ExecOptions{}), nil)
	if err := json.Unmarshal([]byte(text), &raw); err != nil || string(raw["execution"]) != `{"rate":null,"max_buffered":30000,"flush_records":2000,"flush_interval_ms":1000}` {
		t.Fatalf("journaled without a cap: %s (%v)", text, err)
	}
	if _, ex, _, err := unmarshalSpec(text); err != nil || ex == nil || ex.Rate != 0 || ex.MaxBuffered != DefaultMaxBuffered {
		t.Fatalf("read back without a cap: %+v %v", ex, err)
	}
}

// TestJournaledRateLabel: replay show says the rate a resume keeps, and that a run journaled
// without it (an earlier version) has none known.
func TestJournaledRateLabel(t *testing.T) {
	s := Spec{From: "tasks.dlq"}
	for _, tc := range []struct{ selection, want string }{
		{marshalRun(&s, executionOf(ExecOptions{Rate: 5000}), nil), "5000/s"},
		{marshalRun(&s, executionOf(ExecOptions{}), nil), "no cap"},
		{`{"from":"tasks.dlq","to_partition":"auto","max_replays":3}`, "unknown (journaled without its execution settings: a resume sends with no cap unless given --rate)"},
	} {
		if got := JournaledRateLabel(tc.selection); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.selection, got, tc.want)
		}
	}
}
