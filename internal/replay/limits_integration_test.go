package replay

import (
	"bytes"
	"crypto/rand"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// bigTopics are n topics that accept records of max bytes.
func bigTopics(t *testing.T, n, max int) []string {
	t.Helper()
	v := strconv.Itoa(max)
	out := make([]string, n)
	for i := range out {
		out[i] = testenv.Topic(t, 1, map[string]*string{"max.message.bytes": &v})
	}
	return out
}

// TestReplayLargeDeadLetterArrivesWhole: a 1 MiB dead letter goes back into a topic that
// accepts 8 MiB byte for byte, whether its target is named by its headers (read when first
// met) or by --to (read before anything is), scanned first or in a single pass. With
// franz-go's default batch limit of 1,000,012 bytes it failed with MESSAGE_TOO_LARGE.
func TestReplayLargeDeadLetterArrivesWhole(t *testing.T) {
	c, st := cluster(t), store(t)
	cl := testenv.Client(t, kgo.ProducerBatchMaxBytes(8<<20))
	for _, tc := range []struct {
		name       string
		to         bool
		singlePass bool
	}{
		{"headers, scanned", false, false},
		{"headers, single pass", false, true},
		{"--to, single pass", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := bigTopics(t, 3, 8<<20)
			src, dlqTopic, to := ts[0], ts[1], ts[2]
			value := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
			orig := &kgo.Record{Topic: src, Key: []byte("big"), Value: value, Headers: []kgo.RecordHeader{{Key: "h", Value: []byte{0, 1}}}}
			testenv.Produce(t, cl, orig)
			deadLetters(t, cl, dlqTopic, []*kgo.Record{orig}, dlq.Meta{Group: "g", Handler: "h", Error: "boom"})

			spec, target := Spec{From: dlqTopic}, src
			if tc.to {
				spec.To, target = to, to
			}
			var sum *Summary
			var err error
			if tc.singlePass {
				p, perr := NewPlan(t.Context(), c, spec)
				if perr != nil {
					t.Fatal(perr)
				}
				sum, err = Execute(t.Context(), c, st, p, ExecOptions{Operator: "tester", Reason: "large", SinglePass: true})
			} else {
				_, sum, err = execute(t, t.Context(), c, st, spec, ExecOptions{})
			}
			if err != nil {
				t.Fatalf("execute: %v (summary %+v)", err, sum)
			}
			if sum.Status != dedup.RunCompleted || sum.Counts != (dedup.RunCounts{Selected: 1, Sent: 1}) {
				t.Fatalf("summary %+v", sum)
			}
			got := replayed(readTopic(t, c, target), sum.RunID)
			if len(got) != 1 {
				t.Fatalf("%d records replayed into %s, want 1", len(got), target)
			}
			for _, rs := range got {
				if len(rs) != 1 || !bytes.Equal(rs[0].Value, value) || !bytes.Equal(rs[0].Key, orig.Key) || header(rs[0], "h") != "\x00\x01" {
					t.Fatalf("the replayed record is not the original: %d copies, value %d bytes (want %d)", len(rs), len(rs[0].Value), len(value))
				}
			}
		})
	}
}

// TestReplayRecordLargerThanItsTarget: a record larger than its target's limit fails the
// run, as before, with a message naming the record, its size and the limit.
func TestReplayRecordLargerThanItsTarget(t *testing.T) {
	c, st := cluster(t), store(t)
	cl := testenv.Client(t, kgo.ProducerBatchMaxBytes(8<<20))
	big := bigTopics(t, 2, 8<<20)
	src, dlqTopic := big[0], big[1]
	small := bigTopics(t, 1, 600_000)[0]
	// Random bytes: compression does not shrink them under the limit either.
	value := make([]byte, 700_000)
	_, _ = rand.Read(value)
	orig := &kgo.Record{Topic: src, Key: []byte("k"), Value: value}
	testenv.Produce(t, cl, orig)
	dls := deadLetters(t, cl, dlqTopic, []*kgo.Record{orig}, dlq.Meta{Group: "g", Error: "boom"})

	_, sum, err := execute(t, t.Context(), c, st, Spec{From: dlqTopic, To: small}, ExecOptions{})
	if err == nil {
		t.Fatalf("a 700,000-byte record into a topic of 600,000: no error (summary %+v)", sum)
	}
	for _, want := range []string{addr(dls[0]), "the record is 7", "more than " + small + " accepts: 600000 bytes (max.message.bytes of the topic)", "MESSAGE_TOO_LARGE"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if sum == nil || sum.Status != dedup.RunFailed || sum.Counts.Sent != 0 {
		t.Errorf("summary %+v, want a failed run that sent nothing", sum)
	}
	if n := len(readTopic(t, c, small)); n != 0 {
		t.Errorf("%d records in %s", n, small)
	}
}
