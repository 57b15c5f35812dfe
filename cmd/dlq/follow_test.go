package dlq_test

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/cmd/root/roottest"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/inspect/inspecttest"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestDLQListFollow: dlq list --follow lists what is there, then prints the dead letters
// produced after it started, as they arrive, in every format, and ends with exit 0 when
// interrupted. A dead letter that does not pass the filter is not printed.
func TestDLQListFollow(t *testing.T) {
	brokers := testenv.Brokers(t)
	for _, tc := range []struct {
		format string
		line   func(id string) *regexp.Regexp
	}{
		{"jsonl", func(id string) *regexp.Regexp { return regexp.MustCompile(`(?m)^\{.*"event_id":"` + id + `".*\}$`) }},
		{"json", func(id string) *regexp.Regexp { return regexp.MustCompile(`"event_id": "` + id + `"`) }},
		{"csv", func(id string) *regexp.Regexp { return regexp.MustCompile(`(?m)^.*,` + id + `,.*$`) }},
		{"table", func(id string) *regexp.Regexp { return regexp.MustCompile(`(?m)^.*\s` + id + `\s.*$`) }},
	} {
		t.Run(tc.format, func(t *testing.T) {
			topic := dlqTopic(t, 1, nil)
			cl := testenv.Client(t, kgo.DefaultProduceTopic(topic))
			produce := func(id, reason string) {
				orig := &kgo.Record{Topic: "orders", Value: []byte(`{"event_id":"` + id + `"}`)}
				testenv.Produce(t, cl, dlq.NewDeadLetter(orig, dlq.Meta{Topic: topic, Group: "billing", Reason: reason, Error: "boom", EventID: id}))
			}
			produce("before-1", dlq.ReasonRejected)

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			out, _, done := roottest.Start(ctx, "--brokers", brokers, "dlq", "list", "--topic", topic, "--no-status",
				"--dlq-reason", "rejected", "--follow", "-o", tc.format)
			roottest.WaitFor(t, out, tc.line("before-1"), done)

			produce("after-1", dlq.ReasonExhausted) // filtered out
			produce("after-2", dlq.ReasonRejected)
			roottest.WaitFor(t, out, tc.line("after-2"), done)
			produce("after-3", dlq.ReasonRejected)
			roottest.WaitFor(t, out, tc.line("after-3"), done)
			cancel()
			r := <-done
			if r.Code != 0 {
				t.Fatalf("exit %d after the interruption, want 0: %v", r.Code, r.Err)
			}
			got := out.String()
			if strings.Contains(got, "after-1") {
				t.Fatalf("a dead letter the filter leaves out was printed:\n%s", got)
			}
			for _, id := range []string{"before-1", "after-2", "after-3"} {
				if n := len(tc.line(id).FindAllString(got, -1)); n != 1 {
					t.Fatalf("%s printed %d times:\n%s", id, n, got)
				}
			}
			if tc.format == "json" && !strings.HasSuffix(strings.TrimSpace(got), "]") {
				t.Fatalf("the json array is not closed at the end:\n%s", got)
			}
		})
	}
}

// TestDLQListFollowNewTopicsAndPartitions: a follow without --topic also reads the
// dead-letter topics its pattern matches that are created while it runs, from their first
// record; a follow of named topics reads the partitions added to them, and no other topic.
func TestDLQListFollowNewTopicsAndPartitions(t *testing.T) {
	brokers := testenv.Brokers(t)
	prefix := inspecttest.Name("dfn")
	a, b := prefix+".a.dlq", prefix+".b.dlq"
	dlqNamedTopic(t, a, 1, nil)
	cl := testenv.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produce := func(topic string, partition int32, id string) {
		orig := &kgo.Record{Topic: "orders", Value: []byte(`{"event_id":"` + id + `"}`)}
		d := dlq.NewDeadLetter(orig, dlq.Meta{Topic: topic, Group: "billing", Reason: dlq.ReasonRejected, Error: "boom", EventID: id})
		d.Topic, d.Partition = topic, partition
		testenv.Produce(t, cl, d)
	}
	line := func(id string) *regexp.Regexp {
		return regexp.MustCompile(`(?m)^\{.*"event_id":"` + regexp.QuoteMeta(id) + `".*\}$`)
	}
	produce(a, 0, "a-0")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	byPattern, _, patternDone := roottest.Start(ctx, "--brokers", brokers, "dlq", "list", "--pattern", "^"+regexp.QuoteMeta(prefix)+`\.`,
		"--no-status", "--follow", "-o", "jsonl")
	byName, _, nameDone := roottest.Start(ctx, "--brokers", brokers, "dlq", "list", "--topic", a, "--no-status", "--follow", "-o", "jsonl")
	roottest.WaitFor(t, byPattern, line("a-0"), patternDone)
	roottest.WaitFor(t, byName, line("a-0"), nameDone)

	// A topic the pattern matches, created after the follow began: its dead letter, written
	// before the follow can have seen the topic, is printed all the same.
	dlqNamedTopic(t, b, 1, nil)
	produce(b, 0, "b-0")
	roottest.WaitFor(t, byPattern, line("b-0"), patternDone)

	// A partition added to a followed topic: both follows read it from its start.
	testenv.GrowTopic(t, a, 2)
	cl = testenv.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner())) // metadata that knows partition 1
	produce(a, 1, "a-1")
	roottest.WaitFor(t, byPattern, line("a-1"), patternDone)
	roottest.WaitFor(t, byName, line("a-1"), nameDone)

	cancel()
	for name, done := range map[string]<-chan roottest.Exit{"--pattern": patternDone, "--topic": nameDone} {
		if r := <-done; r.Code != 0 {
			t.Fatalf("%s follow: exit %d after the interruption, want 0: %v", name, r.Code, r.Err)
		}
	}
	if got := byName.String(); strings.Contains(got, "b-0") {
		t.Fatalf("the follow of --topic %s printed a dead letter of %s:\n%s", a, b, got)
	}
	for _, id := range []string{"a-0", "b-0", "a-1"} {
		if n := len(line(id).FindAllString(byPattern.String(), -1)); n != 1 {
			t.Fatalf("%s printed %d times by the --pattern follow:\n%s", id, n, byPattern.String())
		}
	}
}

// TestDLQListFollowShareDuplicates: a share group's dead letter of a record already shown
// (listed before the follow, or followed earlier) is printed marked duplicate_of the first
// (a stream's lines are not revised); one of another record is not.
func TestDLQListFollowShareDuplicates(t *testing.T) {
	brokers := testenv.Brokers(t)
	topic := dlqTopic(t, 1, nil)
	cl := testenv.Client(t, kgo.DefaultProduceTopic(topic))
	produce := func(offset string) {
		hdr := func(k, v string) kgo.RecordHeader { return kgo.RecordHeader{Key: k, Value: []byte(v)} }
		testenv.Produce(t, cl, &kgo.Record{Headers: []kgo.RecordHeader{
			hdr(dlq.ShareTopic, "orders"), hdr(dlq.SharePartition, "0"), hdr(dlq.ShareOffset, offset),
			hdr(dlq.ShareGroup, "billing"), hdr(dlq.ShareDeliveryCount, "5"), hdr(dlq.ShareMessage, dlq.ShareMessageExhausted),
		}})
	}
	produce("7") // dlq offset 0
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, _, done := roottest.Start(ctx, "--brokers", brokers, "dlq", "list", "--topic", topic, "--no-status", "--follow", "-o", "jsonl")
	line := func(off int) *regexp.Regexp {
		return regexp.MustCompile(`(?m)^\{"topic":"` + regexp.QuoteMeta(topic) + `","partition":0,"offset":` + strconv.Itoa(off) + `,.*\}$`)
	}
	roottest.WaitFor(t, out, line(0), done)
	produce("8") // 1
	produce("7") // 2: a duplicate of 0, listed before the follow
	produce("8") // 3: a duplicate of 1, followed
	roottest.WaitFor(t, out, line(3), done)
	cancel()
	if r := <-done; r.Code != 0 {
		t.Fatalf("exit %d after the interruption, want 0: %v", r.Code, r.Err)
	}
	got := out.String()
	for off, want := range []string{"", "", topic + "/0/0", topic + "/0/1"} {
		l := line(off).FindString(got)
		has := strings.Contains(l, `"duplicate_of":`)
		if (want == "") == has || want != "" && !strings.Contains(l, `"duplicate_of":"`+want+`"`) {
			t.Errorf("dead letter %d: %s\nwant duplicate_of %q", off, l, want)
		}
	}
}
