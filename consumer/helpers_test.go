package consumer_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/consumer"
	"github.com/fieldwork/fieldwork/inbox"
	"github.com/fieldwork/fieldwork/internal/consume/handlers"
	"github.com/fieldwork/fieldwork/internal/consumerlink"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/inboxlink"
	"github.com/fieldwork/fieldwork/internal/sample"
	"github.com/fieldwork/fieldwork/internal/schema"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// pgStore opens a store on the real PostgreSQL in a schema of its own, migrated, dropped at
// cleanup.
func pgStore(t testing.TB) (*dedup.Store, string) {
	t.Helper()
	dsn := testenv.DSN(t)
	schema := fmt.Sprintf("fwc_%d_%d", time.Now().UnixNano()%1_000_000_000, schemaSeq.Add(1))
	ctx := context.Background()
	st, err := dedup.Open(ctx, dsn, dedup.Options{Schema: schema})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	if _, err := st.Migrate(ctx, false); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	t.Cleanup(func() {
		st.Close()
		if os.Getenv("FIELDWORK_TEST_KEEP") != "" {
			t.Logf("kept schema %s", schema)
			return
		}
		execPG(t, `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`)
	})
	return st, schema
}

var schemaSeq atomic.Int64

// execPG runs one statement on its own connection to the test database.
func execPG(t testing.TB, sql string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, testenv.DSN(t))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// queryInt runs a query returning one integer through the store.
func queryInt(t testing.TB, st *dedup.Store, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	err := st.InTx(context.Background(), func(tx *dedup.Tx) error {
		return tx.QueryRow(context.Background(), sql, args...).Scan(&n)
	})
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// topics creates a source topic with partitions and its dead-letter topic (one partition),
// deleted at cleanup.
func topics(t testing.TB, partitions int32) (source, dlqTopic string) {
	t.Helper()
	source = testenv.Name(t, "fwc")
	dlqTopic = source + ".dlq"
	createTopic(t, source, partitions)
	createTopic(t, dlqTopic, 1)
	return source, dlqTopic
}

func createTopic(t testing.TB, name string, partitions int32) {
	t.Helper()
	createTopicWith(t, testenv.Client(t), name, partitions, nil)
}

// createTopicWith creates a topic with configs through cl (testenv.CreateTopicWith), deleted
// at cleanup; records are kept forever unless configs say otherwise (the sample streams carry
// timestamps of 2025, which time-based retention would delete mid-test).
func createTopicWith(t testing.TB, cl *kgo.Client, name string, partitions int32, configs map[string]string) {
	t.Helper()
	cfg := map[string]*string{}
	for k, v := range configs {
		cfg[k] = &v
	}
	testenv.CreateTopicWith(t, cl, name, partitions, 1, cfg)
}

// producer returns a client that partitions by key the way every Kafka client does.
func producer(t testing.TB) *kgo.Client {
	return testenv.Client(t, kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))
}

// testLogger writes the engine's logs to the test log at Info and above (Debug with -v
// and FIELDWORK_TEST_DEBUG set).
func testLogger(t testing.TB) *slog.Logger {
	level := slog.LevelInfo
	if os.Getenv("FIELDWORK_TEST_DEBUG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: level}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// options are a runner's options as the tests set them, field by field (New takes them as
// consumer.Opt: opts). The CLI-only knobs go through internal/consumerlink.
type options struct {
	Schemas         *schema.Decoder
	Topics          []string
	Group           string
	Consumer        string
	Handler         consumer.Handler
	Store           *dedup.Store
	Kafka           []kgo.Opt
	DLQTopic        string
	MaxAttempts     int
	BatchMax        int
	TxPerEvent      bool
	PerEvent        bool
	RetryBackoff    backoff
	InfraBackoff    backoff
	MaxInfraRetries int
	Breaker         breaker
	StopWhenIdle    time.Duration
	ShutdownTimeout time.Duration
	InstanceID      string
	SessionTimeout  time.Duration
	Logger          *slog.Logger
	Registerer      prometheus.Registerer
	// Chain, when not nil, replaces the default handler chain.
	Chain        []consumer.Middleware
	VersionGuard bool
}

type backoff struct{ Initial, Max time.Duration }

type breaker struct {
	Off                 bool
	Consecutive, Window int
	Ratio               float64
}

// opts are o as the runner's options.
func (o options) opts() []consumer.Opt {
	out := []consumer.Opt{
		consumer.Topics(o.Topics...), consumer.Group(o.Group), consumer.Consumer(o.Consumer), consumer.Kafka(o.Kafka...),
		consumer.DeadLetterTopic(o.DLQTopic), consumer.MaxAttempts(o.MaxAttempts), consumer.BatchMax(o.BatchMax),
		consumer.RetryBackoff(o.RetryBackoff.Initial, o.RetryBackoff.Max), consumer.InfraBackoff(o.InfraBackoff.Initial, o.InfraBackoff.Max),
		consumer.MaxInfraRetries(o.MaxInfraRetries), consumer.StopWhenIdle(o.StopWhenIdle), consumer.ShutdownTimeout(o.ShutdownTimeout),
		consumer.InstanceID(o.InstanceID), consumer.SessionTimeout(o.SessionTimeout), consumer.Logger(o.Logger), consumer.Registerer(o.Registerer),
		consumerlink.Schemas(o.Schemas).(consumer.Opt), consumerlink.TxPerEvent(o.TxPerEvent).(consumer.Opt), consumerlink.PerEvent(o.PerEvent).(consumer.Opt),
	}
	if o.Breaker.Off {
		out = append(out, consumer.NoBreaker())
	} else {
		out = append(out, consumer.Breaker(o.Breaker.Consecutive, o.Breaker.Ratio, o.Breaker.Window))
	}
	if o.VersionGuard {
		out = append(out, consumer.VersionGuard())
	}
	if o.Chain != nil {
		out = append(out, consumer.Chain(o.Chain...))
	}
	return out
}

// newRunner builds the runner o describes.
func newRunner(o options) (*consumer.Runner, error) {
	var st *inbox.Store
	if o.Store != nil {
		st = inboxlink.NewStore(o.Store).(*inbox.Store)
	}
	return consumer.New(st, o.Handler, o.opts()...)
}

// engineOpts are the options most tests share: fast backoffs, idle stop.
func engineOpts(t testing.TB, st *dedup.Store, h consumer.Handler, topic, group string) options {
	return options{
		Topics: []string{topic}, Group: group, Handler: h, Store: st,
		Kafka:        []kgo.Opt{kgo.SeedBrokers(testenv.Brokers(t))},
		StopWhenIdle: 3 * time.Second,
		RetryBackoff: backoff{Initial: 20 * time.Millisecond, Max: 100 * time.Millisecond},
		InfraBackoff: backoff{Initial: 50 * time.Millisecond, Max: 500 * time.Millisecond},
		Logger:       testLogger(t),
	}
}

// run runs a runner until it is idle and returns its totals.
func run(t testing.TB, o options) consumer.Stats {
	t.Helper()
	e, err := runEngine(t, o)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return e.Stats()
}

// runEngine builds a runner of o and runs it, for two minutes at the most, until it stops;
// it returns the runner and what Run returned.
func runEngine(t testing.TB, o options) (*consumer.Runner, error) {
	t.Helper()
	e, err := newRunner(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return e, e.Run(ctx)
}

// startEngine builds a runner of o and runs it in the background for within at the most
// (its context is cancelled at cleanup); runErr receives what Run returns.
func startEngine(t testing.TB, o options, within time.Duration) (e *consumer.Runner, ctx context.Context, runErr chan error) {
	t.Helper()
	e, err := newRunner(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), within)
	t.Cleanup(cancel)
	runErr = make(chan error, 1)
	go func() { runErr <- e.Run(ctx) }()
	return e, ctx, runErr
}

// stopped waits for a started engine's run to end, fails the test if it failed, and returns
// the engine's totals.
func stopped(t testing.TB, e *consumer.Runner, runErr chan error) consumer.Stats {
	t.Helper()
	if err := <-runErr; err != nil {
		t.Fatalf("run: %v", err)
	}
	return e.Stats()
}

// produceSample generates the sample stream o describes and produces it to topic through cl;
// it returns the stream and its manifest.
func produceSample(t testing.TB, cl *kgo.Client, topic string, o sample.Options) ([]sample.Record, sample.Manifest) {
	t.Helper()
	recs, man, err := sample.Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	testenv.Produce(t, cl, sample.KgoRecords(topic, recs)...)
	return recs, man
}

// markerCount counts the markers group holds in st.
func markerCount(t testing.TB, st *dedup.Store, group string) int64 {
	t.Helper()
	return queryInt(t, st, `SELECT count(*) FROM `+st.Table()+` WHERE consumer = $1`, group)
}

// named is a handler with a name; a test's wrapper of a bundled handler embeds it, keeping
// the name (fw.dlq.handler) and applying one event at a time, as Handle does.
type named interface {
	consumer.Handler
	consumer.Namer
}

// bundled is what every bundled handler is: a named handler with a batch path.
type bundled interface {
	named
	consumer.BatchHandler
}

// inTx runs fn in a transaction of st, as the runner gives a handler one.
func inTx(ctx context.Context, st *dedup.Store, fn func(tx *inbox.Tx) error) error {
	return inboxlink.NewStore(st).(*inbox.Store).InTx(ctx, fn)
}

// handler builds a bundled handler and migrates its tables.
func handler(t testing.TB, st *dedup.Store, schema, name, consumer string, cfg handlers.Config) bundled {
	t.Helper()
	cfg.Consumer, cfg.Driver, cfg.Schema = consumer, st.Driver(), schema
	h, err := handlers.New(name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := consumerlink.Prepare(context.Background(), st, h, true); err != nil {
		t.Fatal(err)
	}
	return h.(bundled)
}

// readAll reads every record of topic up to its end offsets at the time of the call.
func readAll(t testing.TB, topic string) []*kgo.Record {
	t.Helper()
	return testenv.ReadTopic(t, testenv.Brokers(t), topic)
}

func header(r *kgo.Record, key string) (string, bool) {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value), true
		}
	}
	return "", false
}

// groupLag compares group's committed offsets with topic's last stable offsets and returns
// the partitions still behind, as "partition@committed<end", and the committed offsets.
func groupLag(t testing.TB, cl *kgo.Client, group, topic string) (behind []string, committed map[int32]int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("end offsets of %s: %v", topic, err)
	}
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("committed offsets of %s: %v", group, err)
	}
	committed = map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		at := int64(-1)
		if c, ok := offs.Lookup(topic, o.Partition); ok && c.Err == nil {
			at = c.At
		}
		committed[o.Partition] = at
		if at < o.Offset && o.Offset > 0 {
			behind = append(behind, fmt.Sprintf("%d@%d<%d", o.Partition, at, o.Offset))
		}
	})
	slices.Sort(behind)
	return behind, committed
}

// TestMain deletes the fieldwork binary testenv.Fieldwork built for the tests that run it.
func TestMain(m *testing.M) { testenv.Main(m) }
