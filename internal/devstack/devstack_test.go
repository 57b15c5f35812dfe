package devstack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/fieldwork/fieldwork/internal/envelope"
	"github.com/fieldwork/fieldwork/internal/schema"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/sample"
)

func start(t *testing.T, o Options) *Stack {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Start(ctx, o)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// client is a separate franz-go client, as any fieldwork command pointed at the stack has.
func client(t *testing.T, addr string, opts ...kgo.Opt) (*kgo.Client, *kadm.Client) {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl, kadm.NewClient(cl)
}

func TestStartServesSeedsAndMigrates(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "dev.db")
	s := start(t, Options{Port: 0, DSN: dsn, Seed: 5})

	host, port, _ := net.SplitHostPort(s.Addr)
	if host != "127.0.0.1" || port == "0" {
		t.Fatalf("Addr = %s", s.Addr)
	}
	_, adm := client(t, s.Addr)

	// The broker advertises the address clients bootstrapped from.
	meta, err := adm.Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(meta.Brokers) != 1 || meta.Brokers[0].Host != "127.0.0.1" || strconv.Itoa(int(meta.Brokers[0].Port)) != port {
		t.Errorf("advertised brokers %+v, want %s", meta.Brokers, s.Addr)
	}
	if meta.Cluster != ClusterID {
		t.Errorf("cluster id %q", meta.Cluster)
	}
	for _, topic := range []string{TopicTasks, TopicDLQ, TopicAvro} {
		td, ok := meta.Topics[topic]
		if !ok || td.Err != nil || len(td.Partitions) != DefaultPartitions {
			t.Errorf("topic %s: %+v", topic, td)
		}
	}

	// End offsets match what was seeded, partition by partition.
	m := s.Seeded.Manifest
	if m.Records == 0 || len(m.Duplicates) == 0 || len(m.Stale) == 0 || len(m.Poison) != 3 {
		t.Fatalf("default stream has no faults: %+v", m.Counts())
	}
	if age := time.Since(m.Last); age < 0 || age > 5*time.Minute {
		t.Errorf("the stream ends %v ago; it should end about a minute before Start", age)
	}
	ends, err := adm.ListEndOffsets(ctx, TopicTasks, TopicDLQ, TopicAvro, TopicShareDLQ)
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range s.Seeded.Topics {
		total := 0
		for p, n := range ts.PerPartition {
			o, _ := ends.Lookup(ts.Topic, int32(p))
			if o.Err != nil || o.Offset != int64(n) {
				t.Errorf("%s/%d: end offset %d (%v), seeded %d", ts.Topic, p, o.Offset, o.Err, n)
			}
			total += n
		}
		if total != ts.Records {
			t.Errorf("%s: per-partition counts sum to %d, not %d", ts.Topic, total, ts.Records)
		}
	}
	if got := s.Seeded.Topics[0]; got.Records != m.Records || got.Events != m.Events || got.Duplicates != len(m.Duplicates) || got.Stale != len(m.Stale) || got.Poison != len(m.Poison) {
		t.Errorf("tasks seed %+v, manifest %+v", got, m.Counts())
	}
	if got := s.Seeded.Topics[1]; got.Records != len(m.Poison) || got.DeadLetters != len(m.Poison) {
		t.Errorf("dlq seed %+v", got)
	}
	// The share group accepted every record but the poison, rejected those, and has nothing
	// left to read; their dead letters carry the broker's headers and coordinates only.
	if sh := s.Seeded.Share; sh == nil || sh.Rejected != len(m.Poison) || sh.Accepted != m.Records-len(m.Poison) || sh.DeadLetters != len(m.Poison) {
		t.Errorf("share group seed %+v", sh)
	}
	offs, err := adm.DescribeShareGroupOffsets(ctx, ShareGroup)
	if err != nil {
		t.Fatal(err)
	}
	offs[ShareGroup].Offsets.Each(func(o kadm.ShareOffset) {
		if o.Lag > 0 {
			t.Errorf("share group %s lags %d on %s/%d", ShareGroup, o.Lag, o.Topic, o.Partition)
		}
	})
	dls := consumeAll(t, s.Addr, TopicShareDLQ, len(m.Poison))
	wantDL := map[string]bool{}
	for _, p := range s.Seeded.Poison {
		wantDL[fmt.Sprintf("%s/%d@%d", p.Topic, p.Partition, p.Offset)] = true
	}
	for _, r := range dls {
		h := func(k string) string {
			for _, x := range r.Headers {
				if x.Key == k {
					return string(x.Value)
				}
			}
			return ""
		}
		at := h("__dlq.errors.topic") + "/" + h("__dlq.errors.partition") + "@" + h("__dlq.errors.offset")
		if !wantDL[at] || r.Key != nil || r.Value != nil || h("__dlq.errors.group") != ShareGroup || h("__dlq.errors.message") != "Offset rejected by client." {
			t.Errorf("share dead letter %s: key %q value %q headers %v", at, r.Key, r.Value, r.Headers)
		}
		delete(wantDL, at)
	}
	if len(wantDL) != 0 {
		t.Errorf("no share dead letter of %v", wantDL)
	}

	// Every record is where Positions says, byte for byte as generated, and one aggregate's
	// records are all in one partition.
	want, _, err := sample.Generate(s.Seeded.Sample)
	if err != nil {
		t.Fatal(err)
	}
	got := consumeAll(t, s.Addr, TopicTasks, m.Records)
	partOf := map[string]int32{}
	for i, pos := range s.Seeded.Positions {
		r := got[pos]
		if r == nil {
			t.Fatalf("record %d not found at %+v", i, pos)
		}
		if !bytes.Equal(r.Value, want[i].Value) || !bytes.Equal(r.Key, want[i].Key) {
			t.Fatalf("record %d at %+v differs from the generated one", i, pos)
		}
		if p, ok := partOf[string(r.Key)]; ok && p != r.Partition {
			t.Errorf("aggregate %s in partitions %d and %d", r.Key, p, r.Partition)
		}
		partOf[string(r.Key)] = r.Partition
	}
	for _, p := range s.Seeded.Poison {
		if s.Seeded.Positions[p.Index] != (Position{p.Partition, p.Offset}) {
			t.Errorf("poison %+v not at its position", p)
		}
	}

	// The dead letters carry the original bytes and fieldwork's headers.
	for _, dl := range consumeAll(t, s.Addr, TopicDLQ, len(m.Poison)) {
		h := map[string]string{}
		for _, x := range dl.Headers {
			h[x.Key] = string(x.Value)
		}
		pos := Position{Partition: int32(atoi(t, h["fw.dlq.partition"])), Offset: int64(atoi(t, h["fw.dlq.offset"]))}
		orig := got[pos]
		if h["fw.dlq.topic"] != TopicTasks || orig == nil || !bytes.Equal(orig.Value, dl.Value) || h["fw.dlq.reason"] != "malformed" || h["content-type"] != sample.ContentType {
			t.Errorf("dead letter %v: headers %v", pos, h)
		}
	}

	// The store is migrated.
	st, err := dedup.Open(ctx, dsn, dedup.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Verify(ctx); err != nil {
		t.Errorf("store not migrated: %v", err)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("atoi(%q): %v", s, err)
	}
	return n
}

func consumeAll(t *testing.T, addr, topic string, n int) map[Position]*kgo.Record {
	t.Helper()
	cl, _ := client(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out := map[Position]*kgo.Record{}
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s: consumed %d of %d records", topic, len(out), n)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { out[Position{r.Partition, r.Offset}] = r })
	}
	return out
}

func TestNoSeedCreatesEmptyTopics(t *testing.T) {
	s := start(t, Options{NoSeed: true, Partitions: 2})
	if s.Seeded != nil || s.Store() != nil {
		t.Fatalf("seeded %v, store %v", s.Seeded, s.Store())
	}
	_, adm := client(t, s.Addr)
	ends, err := adm.ListEndOffsets(context.Background(), TopicTasks, TopicDLQ)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	ends.Each(func(o kadm.ListedOffset) {
		n++
		if o.Err != nil || o.Offset != 0 {
			t.Errorf("%s/%d: %d %v", o.Topic, o.Partition, o.Offset, o.Err)
		}
	})
	if n != 4 {
		t.Errorf("%d partitions, want 2 per topic", n)
	}
}

func TestPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	_, err = Start(context.Background(), Options{Port: port, NoSeed: true})
	if !errors.Is(err, ErrPortInUse) {
		t.Fatalf("err = %v, want ErrPortInUse", err)
	}
	if !strings.Contains(err.Error(), strconv.Itoa(port)) || !strings.Contains(err.Error(), "already in use") {
		t.Errorf("message does not name the port: %v", err)
	}
}

func TestRefusesNonLoopbackHost(t *testing.T) {
	for _, h := range []string{"0.0.0.0", "::", "192.0.2.1", "example.com"} {
		if s, err := Start(context.Background(), Options{Host: h, NoSeed: true}); err == nil {
			s.Close()
			t.Errorf("host %q accepted", h)
		}
	}
}

func TestCloseFreesPortAndIsIdempotent(t *testing.T) {
	s, err := Start(context.Background(), Options{NoSeed: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		t.Fatalf("port still held after Close: %v", err)
	}
	ln.Close()
}

func TestBadDSNLeavesNothingRunning(t *testing.T) {
	_, err := Start(context.Background(), Options{DSN: "mysql://nope", NoSeed: true})
	if err == nil {
		t.Fatal("bad DSN accepted")
	}
}

// TestFreshStartsTheStoreOver: a store keeps an earlier session's markers and runs, which the
// next start reports in Earlier; Fresh removes them.
func TestFreshStartsTheStoreOver(t *testing.T) {
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "dev.db")
	ctx := context.Background()
	first, err := Start(ctx, Options{DSN: dsn, NoSeed: true})
	if err != nil {
		t.Fatal(err)
	}
	if !first.Earlier.Empty() {
		t.Errorf("a new store: earlier %+v", first.Earlier)
	}
	st := first.Store()
	if err := st.InTx(ctx, func(tx *dedup.Tx) error {
		_, err := st.Claim(ctx, tx, "task-projection", []dedup.Marker{{EventID: "e-1"}, {EventID: "e-2"}})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateReplayRun(ctx, dedup.ReplayRun{ID: "r-1", Operator: "op", Reason: "why", Selection: "{}",
		Sources: []string{TopicDLQ}, Target: TopicTasks, Status: dedup.RunCompleted}, nil); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	again := start(t, Options{DSN: dsn, NoSeed: true})
	if want := (Earlier{Markers: 2, Consumers: 1, Runs: 1}); again.Earlier != want {
		t.Errorf("restarted: earlier %+v, want %+v", again.Earlier, want)
	}
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}

	fresh := start(t, Options{DSN: dsn, NoSeed: true, Fresh: true})
	if !fresh.Earlier.Empty() {
		t.Errorf("fresh: earlier %+v", fresh.Earlier)
	}
	if runs, err := fresh.Store().ReplayRuns(ctx, dedup.ReplayRunFilter{Limit: 10}); err != nil || len(runs) != 0 {
		t.Errorf("fresh store: runs %v, %v", runs, err)
	}
}

// TestAvroTopicDecodes: each record of tasks.avro, decoded through the sandbox's schema
// registry, has the envelope its twin in tasks has.
func TestAvroTopicDecodes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := start(t, Options{Port: 0, Seed: 7})
	read := func(topic string) []*kgo.Record {
		t.Helper()
		rc, err := kgo.NewClient(kgo.SeedBrokers(s.Addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		var out []*kgo.Record
		for len(out) < s.Seeded.Topics[0].PerPartition[0] {
			fs := rc.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("read %s: %d records: %v", topic, len(out), err)
			}
			out = append(out, fs.Records()...)
		}
		return out
	}
	jsons, avros := read(TopicTasks), read(TopicAvro)
	dec, err := schema.New(schema.Config{URL: s.SchemaRegistry})
	if err != nil {
		t.Fatal(err)
	}
	decoded := 0
	for i, a := range avros {
		want, werr := envelope.DecodeRecord(jsons[i])
		got, rec, gerr := dec.Event(ctx, a)
		if rec.Value == nil || rec.Value.Format != schema.FormatAvro && rec.Value.Err() == nil {
			t.Fatalf("record %d: not framed as Avro: %+v", i, rec.Value)
		}
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("record %d: JSON twin error %v, Avro error %v", i, werr, gerr)
		}
		if werr == nil {
			decoded++
			if got.ID != want.ID || got.AggregateID != want.AggregateID || got.Version != want.Version || got.Type != want.Type {
				t.Fatalf("record %d: %+v, JSON twin %+v", i, got, want)
			}
		}
	}
	if decoded == 0 {
		t.Fatal("no record decoded")
	}
}
