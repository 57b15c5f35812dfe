package replay_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/fieldwork/fieldwork/cmd/root/roottest"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/replay"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestReplayRefusesASecondRunOverTheSameTopic: while a run reads a dead-letter topic (marked
// running, its process alive), a replay --execute of the same topic is refused before it
// sends anything (exit 1, naming the run), a dry run warns, --force starts it anyway, and a
// run whose process is gone (on this host: no such pid, its journal written long ago) no
// longer holds the topic.
func TestReplayRefusesASecondRunOverTheSameTopic(t *testing.T) {
	env, schema := replayEnv(t)
	st := replayStore(t, schema)
	cl := testenv.Client(t)
	src, dlqTopic, target := testenv.Topic(t, 1, nil), testenv.Topic(t, 1, nil), testenv.Topic(t, 1, nil)
	seedDeadLetters(t, cl, src, dlqTopic, 20, 0)

	// Another operator's run over the topic, driven by a live process (this one).
	other := dedup.ReplayRun{ID: "20261204-120000-aaaaaa", Operator: "bob", Reason: "INC-1", Selection: "{}",
		Sources: []string{dlqTopic}, Target: target, Status: dedup.RunRunning, Owner: replay.Owner()}
	if err := st.CreateReplayRun(context.Background(), other, nil); err != nil {
		t.Fatal(err)
	}
	args := []string{"replay", "--schema", schema, "-t", dlqTopic, "--to", target, "--execute", "--yes", "--reason", "INC-2"}
	r := roottest.RunCode(t, env, 1, args...)
	if !strings.Contains(r.Stderr, "refusing to replay: run "+other.ID+" is replaying from "+dlqTopic+" now (process "+other.Owner) ||
		!strings.Contains(r.Stderr, "pass --force if the selections do not overlap") {
		t.Fatalf("a second run over the topic: %s", r.Stderr)
	}
	if hw := highWatermarks(t, target); hw[target+"/0"] != 0 {
		t.Fatalf("the refused run sent %d records", hw[target+"/0"])
	}
	dry := roottest.RunCode(t, env, 0, "replay", "--schema", schema, "-t", dlqTopic, "--to", target, "-o", "table")
	if !strings.Contains(dry.Stderr+dry.Stdout, "warning: run "+other.ID+" is replaying from "+dlqTopic+" now") {
		t.Errorf("the dry run does not warn of the running run:\n%s\n%s", dry.Stdout, dry.Stderr)
	}
	// Another topic is not held.
	free := testenv.Topic(t, 1, nil)
	seedDeadLetters(t, cl, src, free, 3, 0)
	roottest.RunCode(t, env, 0, "replay", "--schema", schema, "-t", free, "--to", target, "--execute", "--yes", "--reason", "other topic")

	// --force: sent.
	roottest.RunCode(t, env, 0, append(args, "--force")...)
	if n := len(replaySources(t, target)); n != 23 {
		t.Fatalf("after --force the target holds %d replayed records, want 23", n)
	}

	// The process is gone and the journal is old: the topic is free again.
	conn, err := pgx.Connect(context.Background(), testenv.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), `UPDATE `+pgx.Identifier{schema, "replay_runs"}.Sanitize()+
		` SET owner = 'host-gone:1', updated_at = now() - interval '1 hour' WHERE id = $1`, other.ID); err != nil {
		t.Fatal(err)
	}
	roottest.RunCode(t, env, 0, "replay", "--schema", schema, "-t", dlqTopic, "--to", target, "--execute", "--yes", "--reason", "INC-3", "--include-replayed")
}
