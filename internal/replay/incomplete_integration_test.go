package replay

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// boundedCopy is what the consumer writes when a dead letter does not fit its topic: the
// dead letter with fw.dlq.value_omitted and fw.dlq.value_bytes, its value cut to keep bytes
// (-1: none at all).
func boundedCopy(whole *kgo.Record, keep int) *kgo.Record {
	r := *whole
	r.Headers = append(slices.Clone(whole.Headers),
		kgo.RecordHeader{Key: dlq.HeaderValueOmitted, Value: []byte("larger than the dead-letter topic's max.message.bytes (1000012)")},
		kgo.RecordHeader{Key: dlq.HeaderValueBytes, Value: []byte(strconv.Itoa(len(whole.Value)))})
	r.Value = nil
	if keep >= 0 {
		r.Value = whole.Value[:keep:keep]
	}
	return &r
}

// TestReplayNeverSendsABoundedCopy: dead letters carrying fw.dlq.value_omitted are never
// sent; they are counted and listed as incomplete, a dry run says so and exits 0, and an
// executed run (scanned first, or in a single pass) sends the whole ones and exits 3.
func TestReplayNeverSendsABoundedCopy(t *testing.T) {
	c, st := cluster(t), store(t)
	cl := testenv.Client(t)
	src, dlqTopic := testenv.Topic(t, 1, nil), testenv.Topic(t, 1, nil)
	origs := originals(t, cl, src, 4)
	meta := dlq.Meta{Topic: dlqTopic, Reason: dlq.ReasonExhausted, Group: "billing"}
	var letters []*kgo.Record
	for _, o := range origs {
		letters = append(letters, dlq.NewDeadLetter(o, meta))
	}
	letters[1], letters[3] = boundedCopy(letters[1], 4), boundedCopy(letters[3], -1)
	testenv.Produce(t, cl, letters...)
	// cut: the bounded copies, by address, and the length of the value each left out.
	cut := map[string]int64{addr(letters[1]): int64(len(origs[1].Value)), addr(letters[3]): int64(len(origs[3].Value))}
	checkListed := func(t *testing.T, refs []RecordRef) {
		t.Helper()
		if len(refs) != 2 {
			t.Fatalf("%d listed incomplete, want 2: %+v", len(refs), refs)
		}
		for _, r := range refs {
			if n, ok := cut[r.RecordAddress.String()]; !ok || !strings.Contains(r.ValueOmitted, "max.message.bytes") || r.ValueBytes != n {
				t.Errorf("listed %+v", r)
			}
		}
	}

	// A dry run: counted, listed, a notice; nothing sent, exit 0.
	res, err := runFlow(t.Context(), c, st, newPlan(t, c, Spec{From: dlqTopic}), testFlow{})
	if err != nil || res.Report == nil {
		t.Fatalf("dry run: %v %+v", err, res)
	}
	if got := res.Report.Counts; got.Selected != 4 || got.ToSend != 2 || got.Incomplete != 2 || got.Quarantined != 0 {
		t.Fatalf("dry run counts %+v", got)
	}
	checkListed(t, res.Report.Incomplete)
	if !slices.Contains(kinds(res.Notices), NoticeIncomplete) {
		t.Fatalf("dry run notices %+v", res.Notices)
	}

	for _, yes := range []bool{false, true} {
		t.Run("yes="+strconv.FormatBool(yes), func(t *testing.T) {
			o := testFlow{Execute: true, Yes: yes, Operator: "tester", Reason: "test", Confirm: func(Check) error { return nil }}
			res, err := runFlow(t.Context(), c, st, newPlan(t, c, Spec{From: dlqTopic}), o)
			if fwerr.KindOf(err) != fwerr.KindCheck || !strings.Contains(err.Error(), "2 records not sent, incomplete") {
				t.Fatalf("executed: error %v (kind %v), want a check failure naming the incomplete records", err, fwerr.KindOf(err))
			}
			sum := res.Summary
			if sum == nil || sum.Status != dedup.RunCompleted || sum.Counts != (dedup.RunCounts{Selected: 4, Sent: 2}) || sum.IncompleteCount != 2 {
				t.Fatalf("summary %+v", sum)
			}
			checkListed(t, sum.Incomplete)
			got := replayed(readTopic(t, c, src), sum.RunID)
			if len(got) != 2 {
				t.Fatalf("%d records replayed, want the 2 whole ones", len(got))
			}
			for i, l := range letters {
				rs := got[addr(l)]
				_, bounded := cut[addr(l)]
				switch {
				case bounded && len(rs) != 0:
					t.Errorf("bounded copy %s was sent", addr(l))
				case !bounded && (len(rs) != 1 || !bytes.Equal(rs[0].Value, origs[i].Value)):
					t.Errorf("whole dead letter %s: %d copies sent, or not byte for byte", addr(l), len(rs))
				}
			}
			run, _, err := st.ReplayRun(t.Context(), sum.RunID)
			if err != nil || run.Sent != 2 || incompleteOf(run.RunCounts) != 2 {
				t.Fatalf("journaled run %+v (%v)", run, err)
			}
		})
	}
}
