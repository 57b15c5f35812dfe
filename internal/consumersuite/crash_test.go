package consumersuite_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/fieldwork/fieldwork/consumer"
	"github.com/fieldwork/fieldwork/internal/consume/handlers"
	"github.com/fieldwork/fieldwork/internal/consumersuite"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/sample"
	"github.com/fieldwork/fieldwork/internal/testenv"
	"github.com/fieldwork/fieldwork/internal/testenv/invariant"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestCrashSafety runs the suite against `fieldwork consume --handler projection` on a
// stream of 100,000 events (5,000 tasks of 20) with 5% duplicates, 500 stale versions, 1,000
// malformed records and 20 events the projection rejects, SIGKILLed in 30 rounds.
func TestCrashSafety(t *testing.T) {
	consumersuite.Run(t, cli(t), consumersuite.Options{
		Stream:  sample.Options{Seed: 2024, Aggregates: 5000, EventsPerAggregate: 20, DuplicateFraction: 0.05, Stale: 500, Poison: 1000},
		Rejects: 20,
		Rounds:  30,
	})
}

// TestCrashSafetyAvro is the suite on a smaller stream (1,500 events, 5% duplicates, 40
// stale versions, 30 malformed, 10 rounds of kills) written in Avro in the Confluent wire
// format, its schema in the real schema registry (docs/design.md §3.6): the same invariants
// hold, so an Avro stream is consumed with the guarantees of a JSON one. A malformed value
// that is not JSON is written as framed bytes that are not Avro.
func TestCrashSafetyAvro(t *testing.T) {
	url, user, pw := testenv.SchemaRegistry(t)
	consumersuite.Run(t, cli(t), consumersuite.Options{
		Stream: sample.Options{Seed: 2026, Aggregates: 150, EventsPerAggregate: 10, DuplicateFraction: 0.05, Stale: 40, Poison: 30},
		Rounds: 10,
		Prepare: func(t *testing.T, topic string, krecs []*kgo.Record) []string {
			rc := testenv.RegistryClient(t)
			subject := topic + "-value"
			ss, err := rc.CreateSchema(context.Background(), subject, sr.Schema{Schema: sample.AvroSchema, Type: sr.TypeAvro})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				ctx := context.Background()
				if _, err := rc.DeleteSubject(ctx, subject, sr.SoftDelete); err != nil {
					t.Errorf("delete subject %s: %v", subject, err)
				}
				if _, err := rc.DeleteSubject(ctx, subject, sr.HardDelete); err != nil {
					t.Errorf("delete subject %s: %v", subject, err)
				}
			})
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

// TestCrashSafetyTaskboard runs the suite against examples/taskboard, a service of its own
// module built on the public consumer and inbox packages only, as a team's would be: a
// smaller stream (3,000 events: 200 tasks of 15, 5% duplicates, 60 stale versions, 30
// malformed, 10 rejected), SIGKILLed in 8 rounds.
func TestCrashSafetyTaskboard(t *testing.T) {
	consumersuite.Run(t, taskboard(t), consumersuite.Options{
		Stream:  sample.Options{Seed: 2029, Aggregates: 200, EventsPerAggregate: 15, DuplicateFraction: 0.05, Stale: 60, Poison: 30},
		Rejects: 10,
		Rounds:  8,
	})
}

// cli is `fieldwork consume --handler projection`: its effects are the projection's
// task_state rows (applied and stale events counted per task).
func cli(t *testing.T) consumersuite.Target {
	bin := testenv.Fieldwork(t)
	return consumersuite.Target{
		Name: "consume",
		Command: func(p consumersuite.Process) (string, []string, []string) {
			args := []string{"consume", "--brokers", p.Brokers, "--dsn", p.DSN, "--schema", p.Schema, "--migrate",
				"--topic", p.Topic, "--dlq-topic", p.DeadLetterTopic, "--group", p.Group, "--instance-id", p.InstanceID,
				"--handler", handlers.NameProjection, "--metrics-addr", "", "--log-format", "json", "--log-level", "debug",
				"--batch-max", "500", "-o", "json", "--retry-backoff", "20ms", "--retry-backoff-max", "100ms"}
			if p.StopWhenIdle > 0 {
				args = append(args, "--stop-when-idle", p.StopWhenIdle.String())
			}
			return bin, append(args, p.Extra...), nil
		},
		Effects: func(ctx context.Context, st *dedup.Store, p consumersuite.Process) (invariant.Effects, error) {
			table, err := handlers.Table(st.Driver(), p.Schema, handlers.TableTaskState)
			if err != nil {
				return invariant.Effects{}, err
			}
			e := invariant.Effects{Versions: map[string]int64{}, Applied: map[string]int64{}, Stale: map[string]int64{}}
			err = st.InTx(ctx, func(tx *dedup.Tx) error {
				rows, err := tx.Query(ctx, `SELECT aggregate_id, version, applied_events, stale_events, version_gaps FROM `+table+` WHERE consumer = $1`, p.Group)
				if err != nil {
					return err
				}
				defer rows.Close()
				for rows.Next() {
					var id string
					var v, applied, stale, gaps int64
					if err := rows.Scan(&id, &v, &applied, &stale, &gaps); err != nil {
						return err
					}
					e.Versions[id], e.Applied[id], e.Stale[id] = v, applied, stale
					if gaps != 0 {
						e.Problems = append(e.Problems, fmt.Sprintf("task %s: %d version gaps", id, gaps))
					}
				}
				return rows.Err()
			})
			return e, err
		},
	}
}

// taskboard is examples/taskboard (its README says how it runs): built
// from its own module with the module cache only; its effects are its tasks table (one row
// per task, version-guarded) and its notifications outbox (one row per side effect, under
// the idempotency key consumer.IdempotencyKey gives).
func taskboard(t *testing.T) consumersuite.Target {
	dir := filepath.Join(testenv.ModuleRoot(t), "examples", "taskboard")
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("the example service the suite runs against is missing: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "taskboard")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOWORK=off", "GOPROXY=off", "GOFLAGS=-mod=readonly")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build in examples/taskboard: %v\n%s", err, out)
	}
	return consumersuite.Target{
		Name: "taskboard",
		Command: func(p consumersuite.Process) (string, []string, []string) {
			args := []string{"--brokers", p.Brokers, "--dsn", p.DSN, "--schema", p.Schema,
				"--topic", p.Topic, "--dlq-topic", p.DeadLetterTopic, "--group", p.Group, "--instance-id", p.InstanceID}
			if p.StopWhenIdle > 0 {
				args = append(args, "--stop-when-idle", p.StopWhenIdle.String())
			}
			return bin, append(args, p.Extra...), nil
		},
		Effects: func(ctx context.Context, st *dedup.Store, p consumersuite.Process) (invariant.Effects, error) {
			tasks := dedup.TableName(st.Driver(), p.Schema, "tasks")
			notes := dedup.TableName(st.Driver(), p.Schema, "notifications")
			e := invariant.Effects{Versions: map[string]int64{}, Applied: map[string]int64{}, PerEvent: map[string]int64{}}
			err := st.InTx(ctx, func(tx *dedup.Tx) error {
				rows, err := tx.Query(ctx, `SELECT aggregate_id, version FROM `+tasks)
				if err != nil {
					return err
				}
				for rows.Next() {
					var id string
					var v int64
					if err := rows.Scan(&id, &v); err != nil {
						rows.Close()
						return err
					}
					e.Versions[id] = v
				}
				rows.Close()
				if err := rows.Err(); err != nil {
					return err
				}
				rows, err = tx.Query(ctx, `SELECT event_id, aggregate_id, idempotency_key FROM `+notes)
				if err != nil {
					return err
				}
				defer rows.Close()
				for rows.Next() {
					var id, agg, key string
					if err := rows.Scan(&id, &agg, &key); err != nil {
						return err
					}
					e.PerEvent[id]++
					e.Applied[agg]++
					if want := consumer.IdempotencyKey(p.Group, id); key != want && len(e.Problems) < 5 {
						e.Problems = append(e.Problems, "notification of "+id+": idempotency key "+strconv.Quote(key)+", want "+want)
					}
				}
				return rows.Err()
			})
			return e, err
		},
	}
}
