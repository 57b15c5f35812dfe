package replay

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// partitionerKeys are the keys of the partitioner tests: enough that murmur2 places some of
// them elsewhere than crc32 and fnv1a do.
func partitionerKeys() []string {
	keys := make([]string, 24)
	for i := range keys {
		keys[i] = fmt.Sprintf("order-%03d", i*37)
	}
	return keys
}

// siblings maps each key to the one partition its records are in, failing when a key is in
// several (the producer did not place by key).
func siblings(t *testing.T, recs []*kgo.Record) map[string]int32 {
	t.Helper()
	out := map[string]int32{}
	for _, r := range recs {
		if p, ok := out[string(r.Key)]; ok && p != r.Partition {
			t.Fatalf("key %s in partitions %d and %d of %s", r.Key, p, r.Partition, r.Topic)
		}
		out[string(r.Key)] = r.Partition
	}
	return out
}

// firstOfEachKey is the first record of each key among recs, in their order.
func firstOfEachKey(recs []*kgo.Record) []*kgo.Record {
	var out []*kgo.Record
	seen := map[string]bool{}
	for _, r := range recs {
		if !seen[string(r.Key)] {
			seen[string(r.Key)] = true
			out = append(out, r)
		}
	}
	return out
}

// watermillDeadLetter is a Watermill poison record of r: its original topic, no partition.
func watermillDeadLetter(topic string, r *kgo.Record) *kgo.Record {
	return &kgo.Record{Topic: topic, Key: r.Key, Value: r.Value, Headers: []kgo.RecordHeader{
		{Key: dlq.WatermillTopic, Value: []byte(r.Topic)}, {Key: dlq.WatermillHandler, Value: []byte("orders")},
		{Key: dlq.WatermillReason, Value: []byte("boom")}, {Key: "user", Value: []byte{0, 1, 0xff}},
	}}
}

func TestReplayPlacesKeysWithTheirSiblings(t *testing.T) {
	c, st := cluster(t), store(t)
	cl := testenv.Client(t)
	keys := partitionerKeys()
	const parts = 6
	for _, tc := range []struct {
		partitioner kafka.Partitioner
		produce     func(t *testing.T, topic string, n int32)
	}{
		{kafka.PartitionerCRC32, func(t *testing.T, topic string, _ int32) { testenv.KcatProduceKeyed(t, topic, keys, 3) }},
		{kafka.PartitionerFNV1a, func(t *testing.T, topic string, n int32) { testenv.SaramaProduceKeyed(t, topic, n, keys, 3) }},
	} {
		t.Run(string(tc.partitioner), func(t *testing.T) {
			src := testenv.Topic(t, parts, nil)
			tc.produce(t, src, parts)
			want := siblings(t, readTopic(t, c, src))
			if len(want) != len(keys) {
				t.Fatalf("%d keys in %s, want %d", len(want), src, len(keys))
			}
			// The test can fail: murmur2 puts some of these keys elsewhere.
			moved := 0
			for k, p := range want {
				if q, _ := kafka.PartitionerMurmur2.KeyPartition([]byte(k), parts); q != p {
					moved++
				}
			}
			if moved == 0 {
				t.Fatal("murmur2 places every key as the producer did: the keys prove nothing")
			}
			origs := firstOfEachKey(readTopic(t, c, src))

			// Watermill dead letters name no partition: placed by --partitioner.
			dlt := testenv.Topic(t, 2, nil)
			var dls []*kgo.Record
			for _, r := range origs {
				dls = append(dls, watermillDeadLetter(dlt, r))
			}
			testenv.Produce(t, cl, dls...)
			rep, sum, err := execute(t, t.Context(), c, st, Spec{From: dlt, Partitioner: tc.partitioner}, ExecOptions{})
			if err != nil {
				t.Fatal(err)
			}
			checkSiblings(t, c, src, sum.RunID, want, len(keys), true)
			checkRules(t, rep, string(tc.partitioner))

			// fieldwork dead letters name their partition: kept (the counts match).
			dlq2 := testenv.Topic(t, 2, nil)
			deadLetters(t, cl, dlq2, origs, dlq.Meta{Group: "orders"})
			rep, sum, err = execute(t, t.Context(), c, st, Spec{From: dlq2}, ExecOptions{})
			if err != nil {
				t.Fatal(err)
			}
			checkSiblings(t, c, src, sum.RunID, want, len(keys), false)
			checkRules(t, rep, RuleOriginal)

			// Into a topic of another partition count holding the same keys: by the key.
			other := testenv.Topic(t, 4, nil)
			tc.produce(t, other, 4)
			wantOther := siblings(t, readTopic(t, c, other))
			rep, sum, err = execute(t, t.Context(), c, st, Spec{From: dlq2, To: other, Partitioner: tc.partitioner}, ExecOptions{})
			if err != nil {
				t.Fatal(err)
			}
			checkSiblings(t, c, other, sum.RunID, wantOther, len(keys), false)
			checkRules(t, rep, string(tc.partitioner))
		})
	}
}

// checkSiblings checks that the n records run replayed into topic each landed in its key's
// partition, dead-letter headers stripped and (wantUser) the user header kept byte for byte.
func checkSiblings(t *testing.T, c *kafka.Cluster, topic, run string, want map[string]int32, n int, wantUser bool) {
	t.Helper()
	got := 0
	for _, rs := range replayed(readTopic(t, c, topic), run) {
		for _, r := range rs {
			got++
			if p, ok := want[string(r.Key)]; !ok || p != r.Partition {
				t.Errorf("replayed %s landed in %s/%d, its siblings are in partition %d", r.Key, topic, r.Partition, p)
			}
			if wantUser && header(r, "user") != string([]byte{0, 1, 0xff}) || header(r, dlq.WatermillTopic) != "" || header(r, dlq.HeaderTopic) != "" {
				t.Errorf("replayed %s: headers %v", r.Key, r.Headers)
			}
		}
	}
	if got != n {
		t.Errorf("%d records replayed into %s by run %s, want %d", got, topic, run, n)
	}
}

// checkRules checks that every target of the plan got rule.
func checkRules(t *testing.T, rep *Report, rule string) {
	t.Helper()
	var rules []string
	for _, tc := range rep.Targets {
		if tc.Rule != rule {
			rules = append(rules, fmt.Sprintf("%s/%d: %s", tc.Topic, tc.Partition, tc.Rule))
		}
	}
	if len(rep.Targets) == 0 || len(rules) > 0 {
		t.Errorf("targets %v: want every rule %s, not %s", rep.Targets, rule, strings.Join(rules, ", "))
	}
}

// TestReplayInfersThePartitioner: without --partitioner, a replay of dead letters that name no
// original partition (Watermill's) places each keyed record by the partitioner that the target
// topic's own keyed records agree with, written here by librdkafka (kcat) with its FNV-1a,
// murmur2 and CRC-32 partitioners; the plan says which and on what evidence. A target whose
// keyed records agree with no one partitioner (two producers) is refused, a usage error naming
// --partitioner, before anything is sent; one without keyed records takes the default.
func TestReplayInfersThePartitioner(t *testing.T) {
	c, st := cluster(t), store(t)
	cl := testenv.Client(t)
	keys := partitionerKeys()
	const parts = 6
	// moved counts the keys of want that p places elsewhere.
	moved := func(p kafka.Partitioner, want map[string]int32) int {
		n := 0
		for k, part := range want {
			if q, _ := p.KeyPartition([]byte(k), parts); q != part {
				n++
			}
		}
		return n
	}
	deadLettersOf := func(t *testing.T, src string) string {
		dlt := testenv.Topic(t, 2, nil)
		var dls []*kgo.Record
		for _, r := range firstOfEachKey(readTopic(t, c, src)) {
			dls = append(dls, watermillDeadLetter(dlt, r))
		}
		testenv.Produce(t, cl, dls...)
		return dlt
	}
	for _, tc := range []struct {
		partitioner kafka.Partitioner
		librdkafka  string
	}{
		{kafka.PartitionerFNV1a, "fnv1a_random"},
		{kafka.PartitionerMurmur2, "murmur2_random"},
		{kafka.PartitionerCRC32, "consistent_random"},
	} {
		t.Run(string(tc.partitioner), func(t *testing.T) {
			src := testenv.Topic(t, parts, nil)
			testenv.KcatProduceKeyedBy(t, src, tc.librdkafka, keys, 3)
			want := siblings(t, readTopic(t, c, src))
			if len(want) != len(keys) {
				t.Fatalf("%d keys in %s, want %d", len(want), src, len(keys))
			}
			// The test can fail: every other partitioner puts some of these keys elsewhere.
			for _, p := range kafka.Partitioners {
				if p != tc.partitioner && moved(p, want) == 0 {
					t.Fatalf("%s places every key as librdkafka's %s did: the keys prove nothing", p, tc.librdkafka)
				}
			}
			dlt := deadLettersOf(t, src)
			rep, sum, err := execute(t, t.Context(), c, st, Spec{From: dlt}, ExecOptions{})
			if err != nil {
				t.Fatal(err)
			}
			checkSiblings(t, c, src, sum.RunID, want, len(keys), true)
			checkRules(t, rep, string(tc.partitioner))
			n := int64(len(keys) * 3)
			wantText := fmt.Sprintf("%s (inferred: %d of %d keyed records of %s agree)", tc.partitioner, n, n, src)
			if rep.Partitioner == nil || *rep.Partitioner != string(tc.partitioner) || len(rep.PartitionerChoices) != 1 || rep.PartitionerChoices[0].String() != wantText ||
				rep.PartitionerChoices[0].By != ByInferred {
				t.Fatalf("partitioner %v, choices %+v: want %q", rep.Partitioner, rep.PartitionerChoices, wantText)
			}
		})
	}

	t.Run("contradicting evidence", func(t *testing.T) {
		src := testenv.Topic(t, parts, nil)
		testenv.KcatProduceKeyedBy(t, src, "fnv1a_random", keys[:12], 2)
		testenv.KcatProduceKeyedBy(t, src, "murmur2_random", keys[12:], 2)
		want := siblings(t, readTopic(t, c, src))
		for _, p := range kafka.Partitioners {
			if moved(p, want) == 0 {
				t.Fatalf("%s places every key where it is: the two producers prove nothing", p)
			}
		}
		dlt := deadLettersOf(t, src)
		before := endOffsets(t, c, src)
		p, err := NewPlan(t.Context(), c, Spec{From: dlt})
		if err != nil {
			t.Fatal(err)
		}
		_, err = Scan(t.Context(), c, st, p, ScanOptions{})
		if fwerr.KindOf(err) != fwerr.KindUsage || !strings.Contains(fmt.Sprint(err), "--partitioner") ||
			!strings.Contains(fmt.Sprint(err), "cannot tell the partitioner of "+src) {
			t.Fatalf("scan: %v (%v): want a usage error naming --partitioner", err, fwerr.KindOf(err))
		}
		// Executed with --yes (a single pass): refused at the first record, nothing sent.
		res, err := runFlow(t.Context(), c, st, newPlan(t, c, Spec{From: dlt}),
			testFlow{Execute: true, Yes: true, Operator: "tester", Reason: "test " + t.Name()})
		if fwerr.KindOf(err) != fwerr.KindUsage || !strings.Contains(fmt.Sprint(err), "--partitioner") {
			t.Fatalf("single pass: %v %+v: want a usage error naming --partitioner", err, res)
		}
		if after := endOffsets(t, c, src); !slices.Equal(before, after) {
			t.Fatalf("%s moved from %v to %v: something was sent", src, before, after)
		}
		// Named, it is sent by that partitioner.
		rep, _, err := execute(t, t.Context(), c, st, Spec{From: dlt, Partitioner: kafka.PartitionerFNV1a}, ExecOptions{})
		if err != nil || len(rep.PartitionerChoices) != 0 || rep.Partitioner == nil || *rep.Partitioner != string(kafka.PartitionerFNV1a) {
			t.Fatalf("--partitioner fnv1a: %v, %v %+v", err, rep.Partitioner, rep.PartitionerChoices)
		}
		checkRules(t, rep, string(kafka.PartitionerFNV1a))
	})

	// An earlier replay kept the original partitions its dead letters named, which no
	// partitioner agrees with (the original records had been placed by hand): its records in the
	// target are no evidence of the producers' partitioner, and are left out, so that the next
	// replay (or a resume of that one) still infers the producers' fnv1a.
	t.Run("records a replay wrote", func(t *testing.T) {
		src := testenv.Topic(t, parts, nil)
		testenv.KcatProduceKeyedBy(t, src, "fnv1a_random", keys, 3)
		want := siblings(t, readTopic(t, c, src))
		var elsewhere []*kgo.Record // one record of each key, said to be in the next partition
		for _, r := range firstOfEachKey(readTopic(t, c, src)) {
			moved := *r
			moved.Partition = (r.Partition + 1) % parts
			elsewhere = append(elsewhere, &moved)
		}
		dlqTopic := testenv.Topic(t, 2, nil)
		deadLetters(t, cl, dlqTopic, elsewhere, dlq.Meta{Group: "orders"})
		rep, _, err := execute(t, t.Context(), c, st, Spec{From: dlqTopic}, ExecOptions{})
		if err != nil {
			t.Fatal(err)
		}
		checkRules(t, rep, RuleOriginal)
		// The test can fail: with the replayed records as evidence, no partitioner agrees.
		all := kafka.NewPartitionerEvidence(src, parts, nil)
		for _, r := range readTopic(t, c, src) {
			all.Add(r)
		}
		if m := all.Matching(); len(m) != 0 {
			t.Fatalf("%v agree with every keyed record of %s, the replayed ones too: they prove nothing", m, src)
		}

		dlt := deadLettersOf(t, src)
		rep, sum, err := execute(t, t.Context(), c, st, Spec{From: dlt}, ExecOptions{})
		if err != nil {
			t.Fatal(err)
		}
		checkSiblings(t, c, src, sum.RunID, want, len(keys), true)
		checkRules(t, rep, string(kafka.PartitionerFNV1a))
		n := int64(len(keys) * 3)
		wantText := fmt.Sprintf("fnv1a (inferred: %d of %d keyed records of %s agree; %d keyed records a replay wrote left out)", n, n, src, len(keys))
		if len(rep.PartitionerChoices) != 1 || rep.PartitionerChoices[0].String() != wantText ||
			rep.PartitionerChoices[0].ReplayedRecords == nil || *rep.PartitionerChoices[0].ReplayedRecords != int64(len(keys)) {
			t.Fatalf("choices %+v: want %q", rep.PartitionerChoices, wantText)
		}
	})

	// A single pass chose murmur2 for each of its two targets (nothing in them to infer from)
	// and was interrupted after it had met the second. Before its resume, a producer
	// partitioning by fnv1a wrote keyed records to both. The resume places by the choices
	// the run journaled, the second one written mid-run: every key of the run stays in one
	// partition of each target.
	t.Run("a resume keeps the run's choices", func(t *testing.T) {
		first, second := testenv.Topic(t, parts, nil), testenv.Topic(t, parts, nil)
		dlt := testenv.Topic(t, 1, nil) // one partition: the dead letters of first are read before second's
		var dls []*kgo.Record
		for i, target := range []string{first, second, second} {
			for _, k := range keys {
				dls = append(dls, watermillDeadLetter(dlt, &kgo.Record{Topic: target, Key: []byte(k), Value: fmt.Appendf(nil, `{"event_id":"%s-%d"}`, k, i)}))
			}
		}
		testenv.Produce(t, cl, dls...)
		// Interrupted once some records to second are acknowledged (a condition: the rate
		// keeps the rest unsent for a while after it).
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		res, err := runFlow(ctx, c, st, newPlan(t, c, Spec{From: dlt}), testFlow{Execute: true, Yes: true, Operator: "tester", Reason: "test " + t.Name(),
			Rate: 25, RateGiven: true, Progress: func(fp FlowProgress) {
				if fp.Stage == StageSend && fp.Send.Sent > int64(len(keys))+4 {
					cancel()
				}
			}})
		if fwerr.KindOf(err) != fwerr.KindInterrupted || res == nil || res.Summary == nil {
			t.Fatalf("interrupted single pass: %v %+v", err, res)
		}
		runID := res.Summary.RunID
		if sent := len(replayed(readTopic(t, c, second), runID)); sent == 0 || sent == 2*len(keys) {
			t.Fatalf("%d of %d records sent to %s before the interruption: want some", sent, 2*len(keys), second)
		}
		for _, target := range []string{first, second} {
			testenv.KcatProduceKeyedBy(t, target, "fnv1a_random", keys, 2)
		}
		// The test can fail: fnv1a, which the targets' records now agree with, places some keys
		// elsewhere than murmur2.
		murmur2 := map[string]int32{}
		for _, k := range keys {
			murmur2[k], _ = kafka.PartitionerMurmur2.KeyPartition([]byte(k), parts)
		}
		if moved(kafka.PartitionerFNV1a, murmur2) == 0 {
			t.Fatal("fnv1a places every key as murmur2 does: the keys prove nothing")
		}

		p, err := LoadRun(t.Context(), c, st, runID, false)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Scan(t.Context(), c, st, p, ScanOptions{})
		if err != nil || rep.Err() != nil {
			t.Fatal(err, rep.Err())
		}
		for i, target := range []string{first, second} {
			want := "murmur2 (run: default by an earlier attempt: no keyed records in the newest 200 of each partition of " + target + " to infer from)"
			if ch := rep.PartitionerChoices; len(ch) != 2 || ch[i].String() != want || ch[i].By != ByRun {
				t.Fatalf("resume's choices %+v: want %q at %d", ch, want, i)
			}
		}
		sum, err := Execute(t.Context(), c, st, p, ExecOptions{})
		if err != nil || sum.Counts.Sent != int64(len(dls)) {
			t.Fatalf("resumed: %v, %+v", err, sum)
		}
		for _, target := range []string{first, second} {
			for _, rs := range replayed(readTopic(t, c, target), runID) {
				for _, r := range rs {
					if want := murmur2[string(r.Key)]; r.Partition != want {
						t.Errorf("%s/%d: key %s of run %s is in partition %d, murmur2 puts it in %d", r.Topic, r.Offset, r.Key, runID, r.Partition, want)
					}
				}
			}
		}
	})

	t.Run("no evidence", func(t *testing.T) {
		src := testenv.Topic(t, parts, nil)
		dlt := testenv.Topic(t, 2, nil)
		var dls []*kgo.Record
		for _, k := range keys {
			dls = append(dls, watermillDeadLetter(dlt, &kgo.Record{Topic: src, Key: []byte(k), Value: []byte(`{"event_id":"` + k + `"}`)}))
		}
		testenv.Produce(t, cl, dls...)
		rep, _, err := execute(t, t.Context(), c, st, Spec{From: dlt}, ExecOptions{})
		if err != nil {
			t.Fatal(err)
		}
		checkRules(t, rep, string(kafka.PartitionerMurmur2))
		wantText := "murmur2 (default: no keyed records in the newest 200 of each partition of " + src + " to infer from)"
		if len(rep.PartitionerChoices) != 1 || rep.PartitionerChoices[0].String() != wantText {
			t.Fatalf("choices %+v: want %q", rep.PartitionerChoices, wantText)
		}

		// Again, executed in a single pass (no plan to say it): the run's summary says which
		// partitioner placed its records, the first run's records left out of the evidence.
		res, err := runFlow(t.Context(), c, st, newPlan(t, c, Spec{From: dlt}),
			testFlow{Execute: true, Yes: true, Operator: "tester", Reason: "test " + t.Name()})
		if err != nil || res.Report != nil || res.Summary == nil {
			t.Fatalf("single pass: %v, %+v", err, res)
		}
		wantText = fmt.Sprintf("murmur2 (default: no keyed records in the newest 200 of each partition of %s to infer from; %d keyed records a replay wrote left out)", src, len(keys))
		if ch := res.Summary.PartitionerChoices; len(ch) != 1 || ch[0].String() != wantText {
			t.Fatalf("summary's choices %+v: want %q", ch, wantText)
		}
	})
}
