package dlq_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fieldwork/fieldwork/cmd/root/roottest"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// shareRecord is one record of the source topic and what the share consumer does with it.
type shareRecord struct {
	key, value string
	headers    []string // key=value pairs, for kcat -H
	partition  int32
	byKcat     bool
	// ack: the share consumer rejects (a broker dead letter, rejected), releases (redelivered
	// until the delivery limit: exhausted) or accepts the record.
	ack kgo.AckStatus
}

// shareRecords are produced to the source topic: some by kcat, some by franz-go with bytes
// that are not text.
var shareRecords = []shareRecord{
	{key: "reject-kcat", value: `{"n":1}`, headers: []string{"trace=abc", "x-empty="}, partition: 0, byKcat: true, ack: kgo.AckReject},
	{key: "ok-kcat", value: "fine", headers: []string{"trace=def"}, partition: 1, byKcat: true, ack: kgo.AckAccept},
	{key: "reject-bin", value: "\x00\xff\x01 binary", headers: []string{"bin=\x80\x00\x7f"}, partition: 1, ack: kgo.AckReject},
	{key: "release-1", value: "again and again", headers: []string{"t=1"}, partition: 0, ack: kgo.AckRelease},
	{key: "ok-2", value: "fine too", partition: 0, ack: kgo.AckAccept},
}

// TestShareGroupDeadLetters: a share group on the real 4.4 broker, its DLQ configured, rejects
// and releases records (some produced by kcat); the broker writes the dead letters, copy off
// (coordinates only) and copy on. dlq list, show and stats read them; replay sends each back
// to its source topic, byte for byte as kcat reads it (the original record, read from its
// coordinates, when the dead letter holds only them); a dead letter whose original is gone
// (deleted below its offset) is refused, counted and listed.
func TestShareGroupDeadLetters(t *testing.T) {
	for _, copyOn := range []bool{false, true} {
		t.Run(fmt.Sprintf("copy=%v", copyOn), func(t *testing.T) { testShareGroupDeadLetters(t, copyOn) })
	}
}

func testShareGroupDeadLetters(t *testing.T, copyOn bool) {
	kcat, brokers := testenv.Kcat(t), testenv.Brokers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	src := testenv.Name(t, "share-src")
	testenv.CreateTopic(t, src, 2, nil)
	group := testenv.Name(t, "fw-share")
	dlqTopic := kafka.DefaultShareDLQPrefix + group
	testenv.CreateTopic(t, dlqTopic, 1, map[string]*string{kafka.ConfigShareDLQTopicEnable: kmsg.StringPtr("true")})
	admin := testenv.Client(t)
	configure := func(group string) {
		if err := kafka.SetShareGroupConfig(ctx, admin, group, map[string]string{
			kafka.ConfigShareGroupDLQTopic:   dlqTopic,
			kafka.ConfigShareGroupDLQCopy:    strconv.FormatBool(copyOn),
			kafka.ConfigShareDeliveryLimit:   "2",
			kafka.ConfigShareAutoOffsetReset: "earliest",
		}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, _ = kadm.NewClient(admin).DeleteGroups(ctx, group)
		})
	}
	configure(group)

	produceShareRecords(t, kcat, brokers, src)
	originals := map[string]*kgo.Record{} // by key
	for _, r := range testenv.ReadTopic(t, brokers, src) {
		originals[string(r.Key)] = r
	}
	want := 0
	for _, r := range shareRecords {
		if r.ack != kgo.AckAccept {
			want++
		}
	}
	consumeShareGroup(t, ctx, src, group, dlqTopic, want, func(key string) kgo.AckStatus {
		for _, r := range shareRecords {
			if r.key == key {
				return r.ack
			}
		}
		return kgo.AckAccept
	})
	// Copy off, a second group with the same DLQ rejects one record again: a second dead
	// letter of it, listed with the first.
	total, group2 := want, group+"-b"
	if !copyOn {
		configure(group2)
		total++
		consumeShareGroup(t, ctx, src, group2, dlqTopic, total, func(key string) kgo.AckStatus {
			if key == "reject-kcat" {
				return kgo.AckReject
			}
			return kgo.AckAccept
		})
	}

	dsn := "sqlite:" + filepath.Join(t.TempDir(), "journal.db")
	env := map[string]string{"FIELDWORK_BROKERS": brokers, "FIELDWORK_DSN": dsn, "USER": "oncall"}
	if r := roottest.Run(t, env, "db", "migrate"); r.Code != 0 {
		t.Fatalf("db migrate: exit %d\n%s", r.Code, r.Stderr)
	}

	// dlq list: the convention, the original coordinates, group, reason and delivery count.
	r := roottest.Run(t, env, "dlq", "list", "--topic", dlqTopic, "--no-status", "-o", "jsonl")
	if r.Code != 0 {
		t.Fatalf("dlq list: exit %d\n%s", r.Code, r.Stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	if len(lines) != want {
		t.Fatalf("dlq list: %d dead letters, want %d\n%s", len(lines), want, r.Stdout)
	}
	byKey := map[string]dlq.DeadLetter{}
	keyOf := map[string]string{} // every dead letter's address, duplicates too: the record's key
	for _, line := range lines {
		var d dlq.DeadLetter
		var dups struct {
			Duplicates []string `json:"duplicates"`
		}
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if err := json.Unmarshal([]byte(line), &dups); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if d.OriginalTopic != src || d.OriginalPartition == nil || d.OriginalOffset == nil {
			t.Fatalf("dead letter names %s/%v/%v, want a record of %s", d.OriginalTopic, d.OriginalPartition, d.OriginalOffset, src)
		}
		var orig *kgo.Record
		for _, o := range originals {
			if o.Partition == *d.OriginalPartition && o.Offset == *d.OriginalOffset {
				orig = o
			}
		}
		if orig == nil {
			t.Fatalf("dead letter of %s/%d/%d: no such record produced", src, *d.OriginalPartition, *d.OriginalOffset)
		}
		byKey[string(orig.Key)] = d
		keyOf[d.Address().String()] = string(orig.Key)
		for _, a := range dups.Duplicates {
			keyOf[a] = string(orig.Key)
		}
		wantDups := 0
		if string(orig.Key) == "reject-kcat" && !copyOn {
			wantDups = 1
		}
		if len(dups.Duplicates) != wantDups {
			t.Errorf("%s: duplicates %q, want one only for reject-kcat with copy off", orig.Key, dups.Duplicates)
		}
		if d.Convention != dlq.ConventionShareGroup || d.Group != group || len(d.HeaderProblems) > 0 {
			t.Errorf("%s: convention %s group %q problems %v", orig.Key, d.Convention, d.Group, d.HeaderProblems)
		}
		if copyOn != (d.Key != nil) || copyOn && (!bytes.Equal(d.Key, orig.Key) || !bytes.Equal(d.Value, orig.Value)) {
			t.Errorf("%s: dead letter key %q value %q, want the record's copied: %v", orig.Key, d.Key, d.Value, copyOn)
		}
		t.Logf("dead letter %s/%d/%d of %s: %s, %d deliveries, %q", d.Topic, d.Partition, d.Offset, orig.Key, d.Reason, d.Attempts, d.ErrorMessage)
	}
	for _, sr := range shareRecords {
		d, ok := byKey[sr.key]
		switch {
		case sr.ack == kgo.AckAccept && ok:
			t.Errorf("%s was accepted, yet dead-lettered", sr.key)
		case sr.ack == kgo.AckReject && (d.Reason != dlq.ReasonRejected || d.Attempts != 1 || d.ErrorMessage != dlq.ShareMessageRejected):
			t.Errorf("%s: reason %q attempts %d message %q, want rejected after 1 delivery", sr.key, d.Reason, d.Attempts, d.ErrorMessage)
		case sr.ack == kgo.AckRelease && (d.Reason != dlq.ReasonExhausted || d.Attempts != 2 || d.ErrorMessage != dlq.ShareMessageExhausted):
			t.Errorf("%s: reason %q attempts %d message %q, want exhausted after 2 deliveries", sr.key, d.Reason, d.Attempts, d.ErrorMessage)
		}
	}

	// dlq stats: two rejected, one exhausted.
	r = roottest.Run(t, env, "dlq", "stats", "--topic", dlqTopic, "--no-status", "--by", "reason", "-o", "json")
	if r.Code != 0 || !strings.Contains(r.Stdout, `"rejected"`) || !strings.Contains(r.Stdout, `"exhausted"`) {
		t.Fatalf("dlq stats: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}

	// dlq show: the original record, read from its coordinates.
	rej := byKey["reject-kcat"]
	show := showDeadLetter(t, env, rej)
	if show.Original == nil || show.Original.State != dlq.OriginalFound || show.Original.Key == nil || *show.Original.Key != "reject-kcat" {
		t.Fatalf("dlq show: original_record %+v, want the record found", show.Original)
	}

	// The table folds the duplicate into its record's row; show says what the dead letter holds.
	r = roottest.Run(t, env, "dlq", "list", "--topic", dlqTopic, "--no-status", "--wide", "-o", "table")
	t.Logf("dlq list:\n%s", r.Stdout)
	if r.Code != 0 || !copyOn && !strings.Contains(r.Stdout, "+1") {
		t.Fatalf("dlq list (table): exit %d, want the duplicate counted (+1)\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	r = roottest.Run(t, env, "dlq", "show", rej.Address().String(), "--no-status", "-o", "table")
	t.Logf("dlq show:\n%s", r.Stdout)
	if r.Code != 0 || !strings.Contains(r.Stdout, "found at "+src) || copyOn == strings.Contains(r.Stdout, "coordinates only") {
		t.Fatalf("dlq show (text): exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}

	// replay: every dead letter back to its source topic, as the original record.
	r = roottest.Run(t, env, "replay", "--topic", dlqTopic, "--execute", "--yes", "--reason", "share-group", "-o", "json")
	if r.Code != 0 || !strings.Contains(r.Stdout, fmt.Sprintf(`"sent": %d`, total)) {
		t.Fatalf("replay: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	replayed := map[string]*kgo.Record{} // by fw.replay.source
	for _, rec := range testenv.ReadTopic(t, brokers, src) {
		if s := testenv.Header(rec, dlq.ReplayHeaderSource); s != "" {
			replayed[s] = rec
		}
	}
	if len(replayed) != total || len(keyOf) != total {
		t.Fatalf("%d replayed records in %s, %d dead letters listed, want %d", len(replayed), src, len(keyOf), total)
	}
	for addr, key := range keyOf {
		d := byKey[key]
		rec := replayed[addr]
		if rec == nil {
			t.Fatalf("no replay of %s", addr)
		}
		// Each copy is for the group whose dead letter it comes from (fw.replay.for).
		wantFor := group
		if addr != d.Address().String() {
			wantFor = group2
		}
		if got := testenv.Header(rec, dlq.ReplayHeaderFor); got != wantFor {
			t.Errorf("replay of %s is for %q, want %q", addr, got, wantFor)
		}
		orig := originals[key]
		got := kcatRecord(t, kcat, brokers, src, rec.Partition, rec.Offset)
		wantRec := kcatRecord(t, kcat, brokers, src, orig.Partition, orig.Offset)
		if copyOn {
			// The broker copies key and value, not the headers: the replay sends what it holds.
			wantRec.headers = ""
		}
		if got.key != wantRec.key || got.value != wantRec.value || !strings.HasPrefix(got.headers, wantRec.headers) ||
			!strings.Contains(got.headers, dlq.ReplayHeaderSource+"="+addr) {
			t.Errorf("replay of %s (%s), by kcat:\n got %q\nwant %q (then fw.replay.*)", addr, key, got, wantRec)
		}
		t.Logf("kcat: replay of %s %q, original %q", addr, got, wantRec)
		// kcat prints a header value as a C string: the headers are compared byte for byte too.
		var kept []kgo.RecordHeader
		for _, h := range rec.Headers {
			if !strings.HasPrefix(h.Key, dlq.ReplayHeaderPrefix) {
				kept = append(kept, h)
			}
		}
		wantHeaders := orig.Headers
		if copyOn {
			wantHeaders = nil
		}
		if fmt.Sprintf("%q", kept) != fmt.Sprintf("%q", wantHeaders) {
			t.Errorf("replay of %s: headers %q, want %q", key, kept, wantHeaders)
		}
		if rec.Partition != orig.Partition {
			t.Errorf("replay of %s went to partition %d, want its original %d", key, rec.Partition, orig.Partition)
		}
	}
	if copyOn {
		return
	}

	// The originals of partition 0 deleted: a dead letter that holds only coordinates is
	// refused, counted and listed, with why.
	var below int64
	var gone []string
	for addr, key := range keyOf {
		if d := byKey[key]; *d.OriginalPartition == 0 {
			below = max(below, *d.OriginalOffset+1)
			gone = append(gone, addr)
		}
	}
	del := kadm.Offsets{}
	del.AddOffset(src, 0, below, -1)
	if res, err := kadm.NewClient(admin).DeleteRecords(ctx, del); err != nil || res.Error() != nil {
		t.Fatalf("delete records of %s/0 below %d: %v %v", src, below, err, res.Error())
	}
	deleteBelow(t, ctx, admin, src, 0, below)
	show = showDeadLetter(t, env, rej)
	if show.Original == nil || show.Original.State != dlq.OriginalExpired {
		t.Fatalf("dlq show after the delete: original_record %+v, want expired", show.Original)
	}
	r = roottest.Run(t, env, "replay", "--topic", dlqTopic, "--include-replayed", "-o", "json")
	var rep struct {
		Counts struct {
			Incomplete   int64 `json:"incomplete"`
			OriginalGone int64 `json:"original_gone"`
			ToSend       int64 `json:"to_send"`
		} `json:"counts"`
		Incomplete []struct {
			kafka.RecordAddress
			OriginalGone string `json:"original_gone"`
		} `json:"incomplete"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &rep); r.Code != 0 || err != nil {
		t.Fatalf("replay dry run: exit %d, %v\n%s\n%s", r.Code, err, r.Stdout, r.Stderr)
	}
	if rep.Counts.OriginalGone != int64(len(gone)) || rep.Counts.Incomplete != int64(len(gone)) || rep.Counts.ToSend != int64(total-len(gone)) {
		t.Fatalf("replay dry run: counts %+v, want %d gone of %d\n%s", rep.Counts, len(gone), total, r.Stdout)
	}
	for _, in := range rep.Incomplete {
		if !strings.Contains(in.OriginalGone, string(dlq.OriginalExpired)) {
			t.Errorf("%s: original_gone %q, want it expired", in.RecordAddress, in.OriginalGone)
		}
	}
	r = roottest.Run(t, env, "replay", "--topic", dlqTopic, "--include-replayed", "--execute", "--yes", "--reason", "gone", "-o", "json")
	if r.Code != 3 || !strings.Contains(r.Stderr, "original record is gone") {
		t.Fatalf("replay of gone originals: exit %d, want 3 naming them\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	t.Logf("replay of gone originals: exit %d: %s", r.Code, strings.TrimSpace(r.Stderr))
	var done struct {
		Incomplete []kafka.RecordAddress `json:"incomplete"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &done); err != nil {
		t.Fatalf("replay of gone originals: %v\n%s", err, r.Stdout)
	}
	listed := map[string]bool{}
	for _, a := range done.Incomplete {
		listed[a.String()] = true
	}
	for _, g := range gone {
		if !listed[g] {
			t.Errorf("the summary does not list %s\n%s", g, r.Stdout)
		}
	}
}

// deleteBelow waits until the partition's log starts at below (DeleteRecords answers once
// the leader has moved it).
func deleteBelow(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, p int32, below int64) {
	t.Helper()
	testenv.WaitUntil(t, 30*time.Second, nil, "the log start of "+topic+" to move", func() bool {
		starts, err := kadm.NewClient(cl).ListStartOffsets(ctx, topic)
		if err != nil {
			return false
		}
		o, ok := starts.Lookup(topic, p)
		return ok && o.Offset >= below
	})
}

// produceShareRecords writes shareRecords to src: those marked byKcat with kcat, the others
// with franz-go, in order.
func produceShareRecords(t *testing.T, kcat, brokers, src string) {
	t.Helper()
	cl := testenv.Client(t, kgo.DefaultProduceTopic(src), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for _, r := range shareRecords {
		if !r.byKcat {
			rec := &kgo.Record{Key: []byte(r.key), Value: []byte(r.value), Partition: r.partition}
			for _, h := range r.headers {
				k, v, _ := strings.Cut(h, "=")
				rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: k, Value: []byte(v)})
			}
			testenv.Produce(t, cl, rec)
			continue
		}
		args := []string{"-b", brokers, "-t", src, "-P", "-p", strconv.Itoa(int(r.partition)), "-k", r.key}
		for _, h := range r.headers {
			args = append(args, "-H", h)
		}
		cmd := exec.Command(kcat, args...)
		cmd.Stdin = strings.NewReader(r.value + "\n")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kcat produce: %v\n%s", err, out)
		}
	}
}

// consumeShareGroup joins group as a franz-go share consumer of src and acknowledges each
// record as ack says of its key, until dlqTopic holds want dead letters (bounded by ctx).
func consumeShareGroup(t *testing.T, ctx context.Context, src, group, dlqTopic string, want int, ack func(key string) kgo.AckStatus) {
	t.Helper()
	cl := testenv.Client(t, kgo.ConsumeTopics(src), kgo.ShareGroup(group))
	adm := kadm.NewClient(testenv.Client(t))
	for {
		pollCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fs := cl.PollFetches(pollCtx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) { cl.MarkAcks(ack(string(r.Key)), r) })
		if err := cl.FlushAcks(ctx); err != nil {
			t.Fatalf("flush acks: %v", err)
		}
		ends, err := adm.ListEndOffsets(ctx, dlqTopic)
		if err == nil {
			if o, ok := ends.Lookup(dlqTopic, 0); ok && o.Offset >= int64(want) {
				return
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("the broker wrote fewer than %d dead letters to %s in time", want, dlqTopic)
		}
	}
}

// showJSON is what the test reads of `dlq show -o json`.
type showJSON struct {
	Original *struct {
		State dlq.OriginalState `json:"state"`
		Key   *string           `json:"key"`
	} `json:"original_record"`
}

func showDeadLetter(t *testing.T, env map[string]string, d dlq.DeadLetter) showJSON {
	t.Helper()
	r := roottest.Run(t, env, "dlq", "show", d.Address().String(), "--no-status", "-o", "json")
	var out showJSON
	if err := json.Unmarshal([]byte(r.Stdout), &out); r.Code != 0 || err != nil {
		t.Fatalf("dlq show: exit %d, %v\n%s\n%s", r.Code, err, r.Stdout, r.Stderr)
	}
	return out
}

// kcatView is one record as kcat prints it: key and value with their lengths, headers.
type kcatView struct{ key, value, headers string }

// kcatRecord reads the record at topic/p/offset with kcat.
func kcatRecord(t *testing.T, kcat, brokers, topic string, p int32, offset int64) kcatView {
	t.Helper()
	out, err := exec.Command(kcat, "-b", brokers, "-C", "-t", topic, "-p", strconv.Itoa(int(p)), "-o", strconv.FormatInt(offset, 10),
		"-c", "1", "-e", "-f", "%K:%k\x1e%S:%s\x1e%h").Output()
	if err != nil {
		t.Fatalf("kcat read %s/%d/%d: %v", topic, p, offset, err)
	}
	parts := strings.SplitN(string(out), "\x1e", 3)
	if len(parts) != 3 {
		t.Fatalf("kcat read %s/%d/%d: %q", topic, p, offset, out)
	}
	return kcatView{parts[0], parts[1], parts[2]}
}
