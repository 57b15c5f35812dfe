package consumersuite

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fieldwork/fieldwork/internal/consume/handlers"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/sample"
	"github.com/fieldwork/fieldwork/internal/testenv"
	"github.com/fieldwork/fieldwork/internal/testenv/invariant"
)

// TestShareGroupBrokerDLQ runs three `fieldwork consume --share-group` members, SIGKILLed and
// restarted at random points, over a stream with duplicates, stale versions, malformed
// records, events the receiver rejects and events it fails transiently (released, then
// delivered again) or always (exhausted at the delivery limit), the group's dead-letter topic
// configured: the broker writes the dead letters. See runShare for what is checked.
func TestShareGroupBrokerDLQ(t *testing.T) {
	runShare(t, shareOptions{brokerDLQ: true, seed: 4401})
}

// TestShareGroupOwnDLQ is TestShareGroupBrokerDLQ for a share group without a dead-letter
// topic: fieldwork writes the dead letters to <topic>.dlq and accepts the records.
func TestShareGroupOwnDLQ(t *testing.T) {
	runShare(t, shareOptions{brokerDLQ: false, seed: 4402})
}

// shareOptions size one run.
type shareOptions struct {
	brokerDLQ bool
	seed      uint64
}

const (
	shareMembers       = 3
	shareRounds        = 4
	shareKillsPerRound = 2
	// shareDeliveryLimit is the group's share.delivery.count.limit: the most Kafka allows, so
	// that the kills (each returns what the member held, its delivery counted) never exhaust a
	// record that only the always-failing ones reach.
	shareDeliveryLimit = 10
	// shareLockMS is the group's share.record.lock.duration.ms, Kafka's least, so that what a
	// killed member held comes back sooner.
	shareLockMS = "15000"
)

// shareWorld is one run.
type shareWorld struct {
	t      *testing.T
	o      shareOptions
	bin    string
	topic  string
	dlq    string // the broker's DLQ topic, or fieldwork's
	group  string
	schema string
	st     *dedup.Store
	cl     *kgo.Client
	s      *stream
	rcv    *receiver
	procs  []*testenv.Proc
	// flaky fail their first deliveries, always fail every one (exhausted).
	flaky, always map[string]bool
	// last is each task's last first send, by task.
	last map[string]string
	// dlqReader reads the dead letters as they come, dlqSeen their original addresses.
	dlqReader *kgo.Client
	dlqSeen   map[string]bool
	report    []string
}

// runShare checks, against the stream it produced (not the consumer's own report):
//   - every good event but the always-failing ones has one marker, nothing else has one;
//     the events marked fresh are exactly the webhook's delivery rows, each delivered once,
//     and the receiver saw a successful POST of each; each task's last version is fresh;
//   - every poison record (malformed, rejected by the receiver, failing on every delivery) is
//     dead-lettered with its reason — by the broker (its __dlq.errors.* coordinates and
//     message) or by fieldwork (fw.dlq.*) — and nothing else is;
//   - nothing is left in the share group (its lag is 0 on every partition), records were
//     released and delivered again, and every member drained or idled out with exit 0.
func runShare(t *testing.T, o shareOptions) {
	if testing.Short() {
		t.Skip("share group suite: not in -short")
	}
	began := time.Now()
	w := &shareWorld{t: t, o: o, bin: testenv.Fieldwork(t)}
	w.setUp()
	w.kills()
	w.finish()
	w.check()
	w.report = append(w.report, fmt.Sprintf("time: %s in all", time.Since(began).Round(time.Second)))
	t.Log(strings.Join(w.report, "\n  "))
}

func (w *shareWorld) setUp() {
	t := w.t
	ctx := context.Background()
	w.topic = testenv.Name(t, "share")
	w.group = testenv.Name(t, "sg")
	w.cl = testenv.Client(t, kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))
	testenv.CreateTopic(t, w.topic, 4, nil)
	cfg := map[string]string{kafka.ConfigShareDeliveryLimit: strconv.Itoa(shareDeliveryLimit), "share.record.lock.duration.ms": shareLockMS}
	if w.o.brokerDLQ {
		cluster, err := kafka.ReadShareDLQCluster(ctx, w.cl)
		if err != nil {
			t.Fatal(err)
		}
		w.dlq = cluster.Prefix + w.topic
		testenv.CreateTopic(t, w.dlq, 1, map[string]*string{kafka.ConfigShareDLQTopicEnable: kmsg.StringPtr("true")})
		cfg[kafka.ConfigShareGroupDLQTopic] = w.dlq
	} else {
		w.dlq = w.topic + dlq.DefaultTopicSuffix
		testenv.CreateTopic(t, w.dlq, 1, nil)
	}
	if err := kafka.SetShareGroupConfig(ctx, w.cl, w.group, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// The killed members stay in the group until their session times out (45 s).
		ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for {
			_, err := kadm.NewClient(w.cl).DeleteGroup(ctx, w.group)
			if err == nil || ctx.Err() != nil {
				if err != nil {
					t.Logf("delete share group %s: %v", w.group, err)
				}
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	})
	w.schema = testenv.PGSchema(t, "fwshare_")
	st, err := dedup.Open(ctx, testenv.DSN(t), dedup.Options{Schema: w.schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if _, err := st.Migrate(ctx, false); err != nil {
		t.Fatal(err)
	}
	w.st = st
	if w.s, err = newStream(w.topic, sample.Options{Seed: w.o.seed, Aggregates: 500, EventsPerAggregate: 20,
		DuplicateFraction: 0.05, Stale: 250, Poison: 150}, 12); err != nil {
		t.Fatal(err)
	}
	w.pickFailures()
	w.rcv = newReceiver(w.flaky, w.always)
	srv := httptest.NewServer(w.rcv)
	t.Cleanup(srv.Close)
	w.rcv.url = srv.URL
}

// pickFailures picks the events the receiver fails: 3% of the first sends once or twice
// (released, delivered again), and four tasks' last versions on every delivery (exhausted at
// the delivery limit). An earlier version failing so would be released and, delivered again
// after a newer one, marked stale by the version guard: rightly never sent.
func (w *shareWorld) pickFailures() {
	rng := rand.New(rand.NewPCG(w.o.seed, 7))
	w.last = map[string]string{} // versions rise with the first sends: a task's last one is its last version
	for _, e := range w.s.entries {
		if e.kind == sample.KindEvent {
			w.last[e.aggregate] = e.eventID
		}
	}
	w.flaky, w.always = map[string]bool{}, map[string]bool{}
	for _, e := range w.s.entries {
		if e.kind != sample.KindEvent {
			continue
		}
		switch r := rng.IntN(1000); {
		case r < 30:
			w.flaky[e.eventID] = true
		case r < 100 && len(w.always) < 4 && w.last[e.aggregate] == e.eventID:
			w.always[e.eventID] = true
		}
	}
	if len(w.always) != 4 || len(w.flaky) == 0 {
		w.t.Fatalf("picked %d events failing always and %d flaky: the stream is too small", len(w.always), len(w.flaky))
	}
}

// member starts one `fieldwork consume --share-group`.
func (w *shareWorld) member(name string, idle time.Duration) *testenv.Proc {
	args := []string{"consume", "--brokers", testenv.Brokers(w.t), "--dsn", testenv.DSN(w.t), "--schema", w.schema, "--migrate",
		"--topic", w.topic, "--share-group", w.group, "--start-earliest", "--version-guard",
		"--handler", handlers.NameWebhook, "--webhook-url", w.rcv.url, "--webhook-timeout", "5s",
		"--batch-max", "200", "--log-format", "json", "-o", "json"}
	if !w.o.brokerDLQ {
		args = append(args, "--dlq-topic", w.dlq)
	}
	if idle > 0 {
		args = append(args, "--stop-when-idle", idle.String())
	}
	p := testenv.StartProc(w.t, "share-"+name, nil, w.bin, args...)
	w.procs = append(w.procs, p)
	return p
}

// started waits until p has joined (its start line), so that two members never create the
// handler's table at once.
func (w *shareWorld) started(p *testenv.Proc) {
	testenv.WaitUntil(w.t, time.Minute, p.Done(), p.Name+" starts", func() bool {
		return len(p.Lines("share group member starting")) > 0
	})
}

// kills produces the stream in rounds; in each, two members, picked at random, are SIGKILLed
// once a random number of markers is written, and replaced.
func (w *shareWorld) kills() {
	t := w.t
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 31))
	live := make([]*testenv.Proc, shareMembers)
	for i := range live {
		live[i] = w.member(fmt.Sprintf("m%d", i), 0)
		w.started(live[i])
	}
	recs := w.s.records()
	chunk := (len(recs) + shareRounds - 1) / shareRounds
	kills := 0
	started := time.Now()
	for round := range shareRounds {
		lo, hi := round*chunk, min((round+1)*chunk, len(recs))
		testenv.Produce(t, w.cl, recs[lo:hi]...)
		reachable := int64(w.s.reachable(hi))
		for _, e := range w.s.entries[:hi] {
			if w.always[e.eventID] {
				reachable-- // never marked: dead-lettered
			}
		}
		for k := range shareKillsPerRound {
			if !w.o.brokerDLQ {
				w.waitExhausted(recs[:hi])
			}
			// At a random number of markers still to come; at once when the members have
			// caught up already (waiting for the records failing always gives them time).
			markers := w.markerCount()
			i := rng.IntN(len(live))
			if markers < reachable {
				at := markers + 1 + rng.Int64N(max(1, (reachable-markers)*8/10))
				testenv.WaitUntil(t, 2*time.Minute, live[i].Done(), fmt.Sprintf("round %d: %d markers", round, at), func() bool {
					return w.markerCount() >= at
				})
			}
			if err := live[i].Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-live[i].Done()
			kills++
			live[i] = w.member(fmt.Sprintf("r%dk%d", round, k), 0)
			w.started(live[i])
		}
	}
	w.report = append(w.report, fmt.Sprintf("%d records produced, %d SIGKILLs of %d members over %s", len(recs), kills, shareMembers, time.Since(started).Round(time.Second)))
	// The survivors drain on SIGTERM: what they hold is done and acknowledged, or released.
	for _, p := range live {
		if err := p.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range live {
		if code, err := p.Wait(time.Minute); err != nil || code != 0 {
			t.Fatalf("%s after SIGTERM: exit %d, %v", p.Name, code, err)
		}
	}
}

// waitExhausted waits until every always-failing event of recs is dead-lettered. Without a
// dead-letter topic of the group, a record whose last delivery is lost to a kill is archived by
// the broker with no dead letter (Kafka's rule, docs/design.md §3.8): the kills wait for those
// records to be exhausted, which takes them a few seconds of deliveries.
func (w *shareWorld) waitExhausted(recs []*kgo.Record) {
	want := map[string]bool{}
	for _, e := range w.s.entries[:len(recs)] {
		if w.always[e.eventID] {
			want[addr(e.rec)] = true
		}
	}
	if w.dlqReader == nil {
		w.dlqReader = testenv.Client(w.t, kgo.ConsumeTopics(w.dlq), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		w.dlqSeen = map[string]bool{}
	}
	testenv.WaitUntil(w.t, 2*time.Minute, nil, fmt.Sprintf("%d events failing always dead-lettered", len(want)), func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		w.dlqReader.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			a, _, _ := w.deadLetter(r)
			w.dlqSeen[a] = true
		})
		for a := range want {
			if !w.dlqSeen[a] {
				return false
			}
		}
		return true
	})
}

// finish runs three members with --stop-when-idle: each exits 0 once nothing is delivered to
// it and the group has nothing left to deliver (what the killed members held comes back after
// the lock duration).
func (w *shareWorld) finish() {
	began := time.Now()
	final := make([]*testenv.Proc, shareMembers)
	for i := range final {
		final[i] = w.member(fmt.Sprintf("final%d", i), 3*time.Second)
	}
	for _, p := range final {
		if code, err := p.Wait(4 * time.Minute); err != nil || code != 0 {
			w.t.Fatalf("%s: exit %d, %v", p.Name, code, err)
		}
	}
	w.report = append(w.report, fmt.Sprintf("final members to idle: %s", time.Since(began).Round(time.Second)))
}

func (w *shareWorld) markerCount() int64 {
	var n int64
	ctx := context.Background()
	err := w.st.InTx(ctx, func(tx *dedup.Tx) error {
		return tx.QueryRow(ctx, `SELECT count(*) FROM `+w.st.Table()+` WHERE consumer = $1`, w.group).Scan(&n)
	})
	if err != nil {
		w.t.Fatalf("count markers: %v", err)
	}
	return n
}

func (w *shareWorld) check() {
	w.checkMarkers()
	w.checkDeadLetters()
	w.checkGroup()
}

// checkMarkers compares the markers, the webhook's rows and the receiver's successes with the
// stream.
func (w *shareWorld) checkMarkers() {
	t, ctx := w.t, context.Background()
	want := w.s.good()
	for id := range w.always {
		delete(want, id)
	}
	got := markerIDs(t, w.st, w.group)
	var bad []string
	for id := range want {
		if !got[id] {
			bad = append(bad, "no marker for good event "+id)
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			bad = append(bad, "a marker for "+id+", not a good event of the stream (or one failing on every delivery)")
		}
	}
	outcomes, err := w.st.Outcomes(ctx, w.group, slices.Collect(maps.Keys(want)))
	if err != nil {
		t.Fatal(err)
	}
	fresh := map[string]bool{}
	for id := range want {
		if outcomes[id] != dedup.OutcomeStale {
			fresh[id] = true
		}
	}
	rows := w.deliveryRows()
	for id := range fresh {
		if rows[id] != 1 {
			bad = append(bad, fmt.Sprintf("event %s (fresh): %d webhook delivery rows, want 1", id, rows[id]))
		}
		if w.rcv.ok(id) == 0 {
			bad = append(bad, "event "+id+" (fresh): never delivered to the receiver")
		}
	}
	for id, n := range rows {
		if !fresh[id] {
			bad = append(bad, fmt.Sprintf("event %s: %d webhook delivery rows, and it is not fresh", id, n))
		}
	}
	for agg, id := range w.last {
		if !fresh[id] && !w.always[id] {
			bad = append(bad, fmt.Sprintf("task %s: its last version (event %s) is not applied", agg, id))
		}
	}
	for _, p := range head(bad) {
		t.Error(p)
	}
	stale := len(want) - len(fresh)
	w.report = append(w.report, fmt.Sprintf("markers: %d good events of the stream, %d marked (%d applied, %d stale by the version guard; %d stale re-emits produced); %d duplicates produced",
		len(want), len(got), len(fresh), stale, len(w.s.man.Stale), len(w.s.man.Duplicates)))
	w.report = append(w.report, w.rcv.String())
}

// deliveryRows reads the webhook's delivery rows: event id → deliveries.
func (w *shareWorld) deliveryRows() map[string]int64 {
	ctx := context.Background()
	table, err := handlers.Table(w.st.Driver(), w.schema, handlers.TableWebhookDeliveries)
	if err != nil {
		w.t.Fatal(err)
	}
	out := map[string]int64{}
	err = w.st.InTx(ctx, func(tx *dedup.Tx) error {
		rows, err := tx.Query(ctx, `SELECT event_id, deliveries FROM `+table+` WHERE consumer = $1`, w.group)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			var n int64
			if err := rows.Scan(&id, &n); err != nil {
				return err
			}
			out[id] = n
		}
		return rows.Err()
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return out
}

// poison is every record that must be dead-lettered, by address, with its reason: the
// stream's malformed records, its rejected events (the receiver answers 422: rejected) and
// the events failing on every delivery (exhausted).
func (w *shareWorld) poison() map[string]string {
	out := map[string]string{}
	for a, e := range w.s.poison() {
		out[a] = e.reason
		if e.kind == kindRejected {
			out[a] = dlq.ReasonRejected
		}
	}
	for _, e := range w.s.entries {
		if w.always[e.eventID] && e.kind == sample.KindEvent {
			out[addr(e.rec)] = dlq.ReasonExhausted
		}
	}
	if w.o.brokerDLQ {
		// The broker's dead letter says rejected or exhausted only: fieldwork rejects a
		// malformed record as any other poison.
		for a, r := range out {
			if r != dlq.ReasonExhausted {
				out[a] = dlq.ReasonRejected
			}
		}
	}
	return out
}

// checkDeadLetters reads the dead-letter topic and compares it with the poison: each poison
// record dead-lettered (at least once; counted when more), with its reason, nothing else.
func (w *shareWorld) checkDeadLetters() {
	want := w.poison()
	seen := map[string]int{}
	var bad []string
	for _, r := range testenv.ReadTopic(w.t, testenv.Brokers(w.t), w.dlq) {
		a, reason, group := w.deadLetter(r)
		if group != w.group {
			bad = append(bad, fmt.Sprintf("dead letter %s/%d: group %q", r.Topic, r.Offset, group))
			continue
		}
		seen[a]++
		if wr, ok := want[a]; !ok {
			bad = append(bad, "dead letter of "+a+", which is not poison")
		} else if reason != wr {
			bad = append(bad, fmt.Sprintf("dead letter of %s: reason %q, want %q", a, reason, wr))
		}
	}
	again := 0
	for a := range want {
		switch n := seen[a]; {
		case n == 0:
			bad = append(bad, "poison "+a+" ("+want[a]+") was not dead-lettered")
		case n > 1:
			again += n - 1
		}
	}
	for _, p := range head(bad) {
		w.t.Error(p)
	}
	by := "fieldwork's own writer"
	if w.o.brokerDLQ {
		by = "the broker"
	}
	w.report = append(w.report, fmt.Sprintf("dead letters by %s in %s: %d poison records (%s), each dead-lettered; %d written again after a kill",
		by, w.dlq, len(want), countReasons(want), again))
}

// deadLetter reads a dead letter's original address, reason and group: the broker's
// __dlq.errors.* headers (its message says rejected or exhausted) or fieldwork's.
func (w *shareWorld) deadLetter(r *kgo.Record) (address, reason, group string) {
	if !w.o.brokerDLQ {
		d := dlq.Parse(r)
		if d.OriginalPartition == nil || d.OriginalOffset == nil {
			return "", "", d.Group
		}
		return invariant.Addr(d.OriginalTopic, *d.OriginalPartition, *d.OriginalOffset), d.Reason, d.Group
	}
	p, _ := strconv.ParseInt(testenv.Header(r, "__dlq.errors.partition"), 10, 32)
	o, _ := strconv.ParseInt(testenv.Header(r, "__dlq.errors.offset"), 10, 64)
	switch msg := testenv.Header(r, "__dlq.errors.message"); {
	case strings.Contains(msg, "rejected by client"):
		reason = dlq.ReasonRejected
	case strings.Contains(msg, "delivery count exceeded"):
		reason = dlq.ReasonExhausted
	default:
		reason = "?" + msg
	}
	return invariant.Addr(testenv.Header(r, "__dlq.errors.topic"), int32(p), o), reason, testenv.Header(r, "__dlq.errors.group")
}

func countReasons(m map[string]string) string {
	n := map[string]int{}
	for _, r := range m {
		n[r]++
	}
	var parts []string
	for _, r := range slices.Sorted(maps.Keys(n)) {
		parts = append(parts, fmt.Sprintf("%d %s", n[r], r))
	}
	return strings.Join(parts, ", ")
}

// checkGroup: the group has nothing left to deliver, records were released and delivered
// again, and the members that stopped by themselves say so in their summaries.
func (w *shareWorld) checkGroup() {
	t := w.t
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	offs, err := kadm.NewClient(w.cl).DescribeShareGroupOffsets(ctx, w.group)
	if err == nil {
		err = offs.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	offs[w.group].Offsets.Each(func(o kadm.ShareOffset) {
		if o.Lag != 0 {
			t.Errorf("share partition %s/%d: lag %d, want 0", o.Topic, o.Partition, o.Lag)
		}
	})
	released := 0
	var sum struct{ Released, Redelivered, BrokerDeadLettered, Summaries int64 }
	for _, p := range w.procs {
		released += len(p.Lines("released for another delivery"))
		var s struct {
			Released           int64 `json:"released"`
			Redelivered        int64 `json:"redelivered"`
			BrokerDeadLettered int64 `json:"broker_dead_lettered"`
		}
		if out := strings.TrimSpace(p.Stdout()); out != "" {
			if err := json.Unmarshal([]byte(out), &s); err != nil {
				t.Errorf("%s summary %q: %v", p.Name, out, err)
			}
			sum.Released += s.Released
			sum.Redelivered += s.Redelivered
			sum.BrokerDeadLettered += s.BrokerDeadLettered
			sum.Summaries++
		}
	}
	if released == 0 {
		t.Error("no record was released for another delivery")
	}
	// --start-earliest: the first member sets the group's start, the others keep it.
	set, kept := 0, 0
	for _, p := range w.procs {
		set += len(p.Lines("share group had no start of its own: set to the earliest records"))
		kept += len(p.Lines("share group has its own start: kept"))
	}
	if set != 1 || kept != len(w.procs)-1 {
		t.Errorf("--start-earliest: set by %d members, kept by %d; want 1 and %d", set, kept, len(w.procs)-1)
	}
	if want := int64(2 * shareMembers); sum.Summaries != want {
		t.Errorf("%d summaries, want %d (the members that drained or idled out)", sum.Summaries, want)
	}
	w.report = append(w.report, fmt.Sprintf("share group: lag 0 on every partition; %d releases logged by all members (the transient failures); the %d summaries: %d released, %d redelivered, %d dead letters left to the broker",
		released, sum.Summaries, sum.Released, sum.Redelivered, sum.BrokerDeadLettered))
}

// receiver is the webhook's receiver: it answers 422 to the events a task handler would
// reject (an unknown type, data that is not an object), 503 to the flaky events' first one or
// two POSTs and to the always-failing ones, 200 otherwise, and counts per event.
type receiver struct {
	url           string
	flaky, always map[string]bool
	mu            sync.Mutex
	posts, oks    map[string]int
	status        map[int]int
}

func newReceiver(flaky, always map[string]bool) *receiver {
	return &receiver{flaky: flaky, always: always, posts: map[string]int{}, oks: map[string]int{}, status: map[int]int{}}
}

func (r *receiver) ServeHTTP(rw http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	var ev struct {
		ID   string          `json:"event_id"`
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	_ = json.Unmarshal(body, &ev)
	r.mu.Lock()
	r.posts[ev.ID]++
	n := r.posts[ev.ID]
	code := http.StatusOK
	switch {
	case ev.Type == TypeUnknown || len(ev.Data) == 0 || ev.Data[0] != '{':
		code = http.StatusUnprocessableEntity
	case r.always[ev.ID]:
		code = http.StatusServiceUnavailable
	case r.flaky[ev.ID] && n <= 1+len(ev.ID)%2:
		code = http.StatusServiceUnavailable
	default:
		r.oks[ev.ID]++
	}
	r.status[code]++
	r.mu.Unlock()
	rw.WriteHeader(code)
}

func (r *receiver) ok(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.oks[id]
}

func (r *receiver) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	again := 0
	for _, n := range r.oks {
		again += n - 1
	}
	return fmt.Sprintf("receiver: %d POSTs answered 200 (%d events, %d sent again after a kill, under the same idempotency key), %d answered 503, %d answered 422",
		r.status[200], len(r.oks), again, r.status[503], r.status[422])
}
