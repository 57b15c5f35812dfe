package main

import (
	"context"
	"flag"
	"os"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/fieldwork/fieldwork/cmd/root"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/testenv"
	"github.com/fieldwork/fieldwork/internal/testenv/golden"
)

// TestMain makes fieldwork (root.Main) the program `fieldwork` of the scripts, as every
// package's testscripts have it (testenv.ScriptMain).
func TestMain(m *testing.M) { testenv.ScriptMain(m, root.Main) }

// TestScripts runs the end-to-end CLI scripts under testdata/script with the commands every
// package's scripts share (testenv.ScriptParams: fieldwork-exit, fw-exit, fw-create-topic,
// fw-create-db, fw-capture, fw-silent-port) and four of this package's own: fw-claim,
// fw-journal-run, fw-webhook, fw-plain-consumer, fw-share-consumer and fw-share-config. Scripts that need the real services
// skip without them, except where the services are required (CI, FIELDWORK_TEST_REQUIRE=1):
// there they fail. -update rewrites the scripts' expected output.
func TestScripts(t *testing.T) {
	p := testenv.ScriptParams("testdata/script")
	p.UpdateScripts = golden.Update()
	shared := p.Setup
	p.Setup = func(e *testscript.Env) error {
		if err := shared(e); err != nil {
			return err
		}
		// The runbook scripts, which the runbook_* scripts run against the real services.
		if wd, err := os.Getwd(); err == nil {
			e.Setenv("RUNBOOKS", wd+"/docs/runbooks")
		}
		return nil
	}
	p.Cmds["fw-claim"] = cmdClaim
	p.Cmds["fw-webhook"] = cmdWebhook
	p.Cmds["fw-journal-run"] = cmdJournalRun
	p.Cmds["fw-plain-consumer"] = cmdPlainConsumer
	p.Cmds["fw-share-consumer"] = cmdShareConsumer
	p.Cmds["fw-share-config"] = cmdShareConfig
	testscript.Run(t, p)
}

// cmdJournalRun is `fw-journal-run DSN ID STATUS REASON`: it journals a replay run of topic
// src to topic dst in that status (dedup.Store.CreateReplayRun), so scripts can seed runs
// of every status without driving a replay to each.
func cmdJournalRun(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 4 {
		ts.Fatalf("usage: fw-journal-run DSN ID STATUS REASON")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := dedup.Open(ctx, args[0], dedup.Options{})
	ts.Check(err)
	defer st.Close()
	ts.Check(st.CreateReplayRun(ctx, dedup.ReplayRun{ID: args[1], Operator: "script", Reason: args[3], Selection: "{}",
		Sources: []string{"src"}, Target: "dst", Status: args[2]}, nil))
}

// cmdClaim is `fw-claim [flags] DSN SCHEMA CONSUMER EVENT_ID...`: it writes markers the way
// a consumer does (dedup.Store.Claim), so scripts can seed a store on either driver. Flags:
// -ago D (processed that long ago), -topic T -partition P -offset N (the first id's offset;
// the next ids count up), -aggregate A -version V (the first id's version; counting up).
func cmdClaim(ts *testscript.TestScript, neg bool, args []string) {
	fs := flag.NewFlagSet("fw-claim", flag.ContinueOnError)
	ago := fs.Duration("ago", 0, "")
	topic := fs.String("topic", "", "")
	partition := fs.Int("partition", 0, "")
	offset := fs.Int64("offset", 0, "")
	aggregate := fs.String("aggregate", "", "")
	version := fs.Int64("version", 1, "")
	if err := fs.Parse(args); err != nil || neg || fs.NArg() < 4 {
		ts.Fatalf("usage: fw-claim [-ago D] [-topic T -partition P -offset N] [-aggregate A -version V] DSN SCHEMA CONSUMER EVENT_ID...")
	}
	rest := fs.Args()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := dedup.Open(ctx, rest[0], dedup.Options{Schema: rest[1]})
	ts.Check(err)
	defer st.Close()
	var at time.Time
	if *ago > 0 {
		at = time.Now().Add(-*ago)
	}
	var ms []dedup.Marker
	for i, id := range rest[3:] {
		m := dedup.Marker{EventID: id, ProcessedAt: at, Topic: *topic}
		if *topic != "" {
			m.Partition, m.Offset = int32(*partition), *offset+int64(i)
		}
		if *aggregate != "" {
			m.AggregateID, m.AggregateVersion = *aggregate, *version+int64(i)
		}
		ms = append(ms, m)
	}
	ts.Check(st.InTx(ctx, func(tx *dedup.Tx) error {
		_, err := st.Claim(ctx, tx, rest[2], ms)
		return err
	}))
}
