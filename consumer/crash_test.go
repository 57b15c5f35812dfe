package consumer_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/fieldwork/fieldwork/internal/consume/handlers"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/sample"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// buildFieldwork builds the fieldwork binary into a temporary directory.
func buildFieldwork(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fieldwork")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/fieldwork/fieldwork")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// child is one `fieldwork consume` process.
type child struct {
	cmd      *exec.Cmd
	stdout   bytes.Buffer
	mu       sync.Mutex
	stderr   bytes.Buffer
	assigned chan struct{} // closed when it logs its first assignment
	exited   chan error
}

func startChild(t *testing.T, bin string, args ...string) *child {
	t.Helper()
	c := &child{cmd: exec.Command(bin, args...), assigned: make(chan struct{}), exited: make(chan error, 1)}
	c.cmd.Stdout = &c.stdout
	c.cmd.Env = append(os.Environ(), "NO_COLOR=1")
	errPipe, err := c.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(errPipe)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			c.mu.Lock()
			c.stderr.WriteString(line + "\n")
			c.mu.Unlock()
			if strings.Contains(line, `"partitions assigned"`) {
				once.Do(func() { close(c.assigned) })
			}
		}
		_, _ = io.Copy(io.Discard, errPipe)
		c.exited <- c.cmd.Wait()
	}()
	return c
}

func (c *child) logTail(n int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(c.stderr.String()), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// TestCrashSafety kills `fieldwork consume` with SIGKILL at random moments while it
// consumes a stream of 100,000 events (5,000 tasks of 20) with 5% duplicates, 500 stale
// versions and 1% poison, for two consumer groups at once (projection and audit), 15 rounds
// each (30 kills), then lets a clean run of each finish. The invariants, each checked:
//
//   - every non-poison event has its effect exactly once: the projection applied each first
//     send once (applied_events per task) and counted each stale re-emit once, the audit has
//     one row per event id, and each group has exactly one marker per event id — so the
//     5,000 duplicates and every record read again after a kill were absorbed;
//   - every poison record is dead-lettered, at least once per group, and nothing else is;
//   - nothing is lost: no event id lacks its effect, no child skipped offsets inside a run
//     or read past records the broker no longer had, and both groups' committed offsets are
//     at the end of every partition.
//
// It took 56s on two cores shared with other work (load average 10).
func TestCrashSafety(t *testing.T) {
	crashSafety(t, crashRun{
		stream: sample.Options{Seed: 2024, Aggregates: 5000, EventsPerAggregate: 20, DuplicateFraction: 0.05, Stale: 500, Poison: 1000},
		rounds: 15,
	})
}

// TestCrashSafetyAvro is the crash test on a smaller stream (1,500 events, 5% duplicates, 40
// stale versions, 30 poison, 5 rounds of kills per group) written in Avro in the Confluent
// wire format, its schema in the real schema registry (docs/design.md §3.6): the same
// invariants hold, so an Avro stream is consumed with the guarantees of a JSON one. A poison
// value that is not JSON is written as framed bytes that are not Avro.
func TestCrashSafetyAvro(t *testing.T) {
	url, user, pw := testenv.SchemaRegistry(t)
	crashSafety(t, crashRun{
		stream: sample.Options{Seed: 2026, Aggregates: 150, EventsPerAggregate: 10, DuplicateFraction: 0.05, Stale: 40, Poison: 30},
		rounds: 5,
		prepare: func(t *testing.T, topic string, krecs []*kgo.Record) []string {
			ss, err := testenv.RegistryClient(t).CreateSchema(context.Background(), topic+"-value", sr.Schema{Schema: sample.AvroSchema, Type: sr.TypeAvro})
			if err != nil {
				t.Fatal(err)
			}
			sch := avro.MustParse(sample.AvroSchema)
			for i, r := range krecs {
				b, ok, err := sample.AvroValue(sch, r.Value)
				if err != nil {
					t.Fatalf("record %d: %v", i, err)
				}
				if !ok {
					b = []byte{0xff, 0xff, 0xff, 0x01}
				}
				v, _ := new(sr.ConfluentHeader).AppendEncode(nil, ss.ID, nil)
				r.Value, r.Headers = append(v, b...), nil
			}
			pwFile := filepath.Join(t.TempDir(), "registry-password")
			if err := os.WriteFile(pwFile, []byte(pw), 0o600); err != nil {
				t.Fatal(err)
			}
			return []string{"--schema-registry", url, "--schema-registry-username", user, "--schema-registry-password-file", pwFile}
		},
	})
}

// crashRun is one crash test: the stream, the rounds of kills, and prepare, which may rewrite
// the stream's records before they are produced and returns flags for every consumer.
type crashRun struct {
	stream  sample.Options
	rounds  int
	prepare func(t *testing.T, topic string, krecs []*kgo.Record) []string
}

func crashSafety(t *testing.T, cr crashRun) {
	if testing.Short() {
		t.Skip("crash test: not in -short")
	}
	brokers, dsn := testenv.Brokers(t), testenv.DSN(t)
	bin := buildFieldwork(t)
	st, schema := pgStore(t)
	topic, dlqTopic := topics(t, 4)
	recs, man, err := sample.Generate(cr.stream)
	if err != nil {
		t.Fatal(err)
	}
	krecs := sample.KgoRecords(topic, recs)
	var extra []string
	if cr.prepare != nil {
		extra = cr.prepare(t, topic, krecs)
	}

	// Groups of their own: a static member outlives its process by the session timeout, so
	// a fixed name would meet the previous run's member.
	groups := map[string]string{
		handlers.NameProjection: testenv.Name(t, "crash-projection"),
		handlers.NameAudit:      testenv.Name(t, "crash-audit"),
	}
	slots := []struct{ group, handler string }{
		{groups[handlers.NameProjection], handlers.NameProjection},
		{groups[handlers.NameAudit], handlers.NameAudit},
	}
	for _, s := range slots {
		handler(t, st, schema, s.handler, s.group, handlers.Config{}) // migrate its table
	}
	args := func(group, h string, more ...string) []string {
		return append(append([]string{"consume", "--brokers", brokers, "--dsn", dsn, "--schema", schema,
			"--topic", topic, "--group", group, "--handler", h, "--instance-id", group + "-0",
			"--metrics-addr", "", "--log-format", "json", "--batch-max", "500", "-o", "json",
			"--retry-backoff", "20ms", "--retry-backoff-max", "100ms", "--log-level", "debug"}, extra...), more...)
	}

	// Rounds: produce the next slice of the stream, start both consumers, and SIGKILL each at
	// a random moment after it has joined the group and started consuming.
	rounds := cr.rounds
	cl := producer(t)
	chunk := (len(krecs) + rounds - 1) / rounds
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	kills := map[string]int{}
	var children []*child
	var childrenMu sync.Mutex
	started := time.Now()
	for round := range rounds {
		lo, hi := round*chunk, min((round+1)*chunk, len(krecs))
		if lo < hi {
			testenv.Produce(t, cl, krecs[lo:hi]...)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, s := range slots {
			delay := time.Duration(50+rng.IntN(1200)) * time.Millisecond
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := startChild(t, bin, args(s.group, s.handler)...)
				childrenMu.Lock()
				children = append(children, c)
				childrenMu.Unlock()
				select {
				case <-c.assigned:
				case err := <-c.exited:
					t.Errorf("%s exited before consuming: %v\n%s", s.group, err, c.logTail(20))
					return
				case <-time.After(60 * time.Second):
					_ = c.cmd.Process.Kill()
					t.Errorf("%s: no assignment within 60s\n%s", s.group, c.logTail(20))
					return
				}
				time.Sleep(delay)
				if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Errorf("kill %s: %v", s.group, err)
				}
				<-c.exited
				mu.Lock()
				kills[s.handler]++
				mu.Unlock()
				if dir := os.Getenv("FIELDWORK_TEST_KEEP"); dir != "" {
					_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%02d.log", s.handler, round)), []byte(c.logTail(1_000_000)), 0o644)
				}
			}()
		}
		wg.Wait()
		if t.Failed() {
			return
		}
	}
	killPhase := time.Since(started)

	// The final, clean runs, both groups at once: until idle.
	summaries := map[string]map[string]any{}
	finals := map[string]*child{}
	for _, s := range slots {
		finals[s.handler] = startChild(t, bin, args(s.group, s.handler, "--stop-when-idle", "5s")...)
		children = append(children, finals[s.handler])
	}
	finalStart := time.Now()
	for _, s := range slots {
		c := finals[s.handler]
		select {
		case err := <-c.exited:
			if err != nil {
				t.Fatalf("final run of %s: %v\n%s", s.group, err, c.logTail(30))
			}
		case <-time.After(5*time.Minute - time.Since(finalStart)):
			_ = c.cmd.Process.Kill()
			t.Fatalf("final run of %s did not finish\n%s", s.group, c.logTail(30))
		}
		if dir := os.Getenv("FIELDWORK_TEST_KEEP"); dir != "" {
			_ = os.WriteFile(filepath.Join(dir, s.handler+".log"), []byte(c.logTail(1_000_000)), 0o644)
		}
		var sum map[string]any
		if err := json.Unmarshal(c.stdout.Bytes(), &sum); err != nil {
			t.Fatalf("summary of %s: %v: %q", s.group, err, c.stdout.String())
		}
		summaries[s.handler] = sum
	}
	finalPhase := time.Since(finalStart)

	// What the stream says must be there.
	unique := int64(man.UniqueEventIDs())
	poisonAt := map[string]bool{} // "partition/offset"
	for _, p := range man.Poison {
		r := krecs[p.Index]
		poisonAt[fmt.Sprintf("%d/%d", r.Partition, r.Offset)] = true
	}
	wantIDs := map[string]bool{}
	for i, k := range man.Kinds {
		if k == sample.KindEvent || k == sample.KindStale {
			wantIDs[man.EventIDs[i]] = true
		}
	}

	// Projection: each first send applied exactly once, each stale re-emit counted once.
	applied, stale := checkProjection(t, st, schema, groups[handlers.NameProjection], man)

	// Audit: one row per event id, no more, no less, nothing else.
	audit := tableName(t, st, schema, handlers.TableAuditLog)
	auditRows := queryInt(t, st, `SELECT count(*) FROM `+audit+` WHERE consumer = $1`, groups[handlers.NameAudit])
	auditTwice := queryInt(t, st, `SELECT count(*) FROM (SELECT event_id FROM `+audit+` WHERE consumer = $1 GROUP BY event_id HAVING count(*) > 1) d`, groups[handlers.NameAudit])
	auditIDs := map[string]bool{}
	err = st.InTx(context.Background(), func(tx *dedup.Tx) error {
		rows, err := tx.Query(context.Background(), `SELECT DISTINCT event_id FROM `+audit+` WHERE consumer = $1`, groups[handlers.NameAudit])
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return err
			}
			auditIDs[id] = true
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	missing := 0
	for id := range wantIDs {
		if !auditIDs[id] {
			missing++
		}
	}
	if auditRows != unique || auditTwice != 0 || missing != 0 || len(auditIDs) != len(wantIDs) {
		t.Errorf("audit: %d rows, %d events recorded more than once, %d events missing, %d distinct ids; want %d rows, each of the %d events once",
			auditRows, auditTwice, missing, len(auditIDs), unique, len(wantIDs))
	}

	markers := map[string]int64{}
	for _, s := range slots {
		markers[s.handler] = queryInt(t, st, `SELECT count(*) FROM `+st.Table()+` WHERE consumer = $1`, s.group)
		if markers[s.handler] != unique {
			t.Errorf("%s: %d markers, want %d", s.handler, markers[s.handler], unique)
		}
	}

	// Dead letters: every poison record at least once per group, and nothing else.
	dls := readAll(t, dlqTopic)
	seen := map[string]map[string]int{} // group → "p/o" → count
	strays := 0
	for _, d := range dls {
		g, _ := header(d, dlq.HeaderGroup)
		p, _ := header(d, dlq.HeaderPartition)
		o, _ := header(d, dlq.HeaderOffset)
		at := p + "/" + o
		if !poisonAt[at] {
			strays++
			if strays <= 5 {
				reason, _ := header(d, dlq.HeaderReason)
				msg, _ := header(d, dlq.HeaderError)
				t.Errorf("dead letter for a record that is not poison: %s %s (%s: %s)", g, at, reason, msg)
			}
			continue
		}
		if seen[g] == nil {
			seen[g] = map[string]int{}
		}
		seen[g][at]++
	}
	for _, s := range slots {
		if len(seen[s.group]) != len(poisonAt) {
			t.Errorf("%s: %d of the %d poison records are in the dead-letter topic", s.handler, len(seen[s.group]), len(poisonAt))
		}
	}

	P, A := handlers.NameProjection, handlers.NameAudit
	totalKills := kills[P] + kills[A]
	lag := map[string][]string{}
	for _, s := range slots {
		if lag[s.handler], _ = groupLag(t, cl, s.group, topic); len(lag[s.handler]) > 0 {
			t.Errorf("%s: committed offsets behind the end: %v", s.handler, lag[s.handler])
		}
	}

	// The children's own account: no record may be skipped inside a process (the stream has
	// no transaction markers and no compaction), and the client must not report records the
	// broker no longer has.
	var skips, fetchErrors []string
	for _, c := range children {
		for _, line := range strings.Split(c.logTail(1_000_000), "\n") {
			switch {
			case strings.Contains(line, "offsets skipped between batches"):
				skips = append(skips, line)
			case strings.Contains(line, `"fetch error"`), strings.Contains(line, "OFFSET_OUT_OF_RANGE"):
				fetchErrors = append(fetchErrors, line)
			}
		}
	}
	for _, l := range append(skips, fetchErrors...)[:min(5, len(skips)+len(fetchErrors))] {
		t.Errorf("child log: %s", l)
	}
	report := fmt.Sprintf(`crash test: %d SIGKILLs (%d projection, %d audit) over %s while consuming, then a clean run each (%s)
  stream:      %d records = %d events + %d duplicates + %d stale versions + %d poison, on 4 partitions
  expected:    %d distinct event ids with an effect, %d poison records dead-lettered
  projection:  %d tasks, applied_events %d (want %d), stale_events %d (want %d), markers %d (want %d)
  audit:       %d rows (want %d), %d distinct ids, %d recorded twice, %d missing, markers %d (want %d)
  duplicates absorbed: the %d of the stream and every record read again after a kill; the final runs alone skipped projection %s, audit %s
  dead letters: %d records; distinct poison per group: projection %d, audit %d (want %d each); strays %d
  offsets:     behind the end after the final runs: projection %v, audit %v
  final runs:  projection %v, audit %v`,
		totalKills, kills[P], kills[A], killPhase.Round(time.Second), finalPhase.Round(time.Second),
		len(krecs), man.Events, len(man.Duplicates), len(man.Stale), len(man.Poison),
		unique, len(man.Poison),
		len(man.Aggregates), applied, man.Events, stale, len(man.Stale), markers[P], unique,
		auditRows, unique, len(auditIDs), auditTwice, missing, markers[A], unique,
		len(man.Duplicates), summaryField(summaries[P], "duplicates"), summaryField(summaries[A], "duplicates"),
		len(dls), len(seen[groups[P]]), len(seen[groups[A]]), len(poisonAt), strays,
		lag[P], lag[A], compact(summaries[P]), compact(summaries[A]))
	t.Log(report)
	if testing.Verbose() {
		fmt.Println(report)
	}
	if totalKills < 2*rounds {
		t.Errorf("only %d kills", totalKills)
	}
}

func summaryField(m map[string]any, k string) string {
	if v, ok := m[k].(float64); ok {
		return strconv.FormatInt(int64(v), 10)
	}
	return "?"
}

func compact(m map[string]any) string {
	var b strings.Builder
	for _, k := range []string{"records", "processed", "duplicates", "stale", "dead_lettered"} {
		if v, ok := m[k].(float64); ok {
			b.WriteString(k + "=" + strconv.FormatInt(int64(v), 10) + " ")
		}
	}
	return strings.TrimSpace(b.String())
}
