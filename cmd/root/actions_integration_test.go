package root_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/cmd/root"
	"github.com/fieldwork/fieldwork/cmd/root/roottest"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/inspect/inspecttest"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// actionWorld is one destructive command's world on the real Kafka and PostgreSQL: the
// environment of its runs (USER=tester names the operator), its store, and its schema.
type actionWorld struct {
	env    map[string]string
	schema string
	st     *dedup.Store
}

// actionLine is what a case's setup made: the command line (a dry run), what its plan says,
// the question it asks, the reason it journals, and the journal it writes to.
type actionLine struct {
	args []string
	// dryRun says whether the command has a dry run (every one has, now).
	dryRun bool
	// ownReason says that the action keeps the reason it was journaled with (replay resume):
	// it takes no --reason, and its plan shows that one.
	ownReason bool
	// dry is what the dry run prints of its plan (in JSON, off a terminal).
	dry string
	// plan is what the prompt's plan line shows.
	plan string
	// question is the start of the question asked on a terminal.
	question string
	// reason is the reason journaled: --reason, or the resumed run's own.
	reason string
	// journal is the journal as the operator reads it, one line a row.
	journal func(t *testing.T) []string
	// row is the line the executed action adds to it (a resume updates its run's row).
	row    string
	update bool
}

// TestDestructiveCommands: every command that changes something and journals it runs the one
// flow (internal/action, cmdutil.RunAction), and behaves the same: without --execute it prints
// its plan and changes nothing; on a terminal it shows the plan and its reason above the
// question, and a no exits 6 with nothing changed or journaled; off a terminal it refuses
// without --yes (exit 2); with --yes it acts and journals one row, operator and reason.
func TestDestructiveCommands(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, w *actionWorld) actionLine
	}{
		{"replay", setupReplay},
		{"replay resume", setupReplayResume},
		{"processed prune", setupPrune},
		{"processed forget", setupForget},
		{"groups skip", setupSkip},
		{"groups skip --undo", setupUndo},
		{"groups reset", setupReset},
		{"groups reset --undo", setupResetUndo},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newActionWorld(t)
			l := tc.setup(t, w)
			before := l.journal(t)
			if hasRow(before, l.row) {
				t.Fatalf("the journal holds %q before the action:\n%s", l.row, strings.Join(before, "\n"))
			}
			args := append(append([]string{}, l.args...), "--schema", w.schema)
			exec := args
			if l.dryRun {
				r := roottest.RunCode(t, w.env, 0, args...)
				reason, _ := json.Marshal(l.reason)
				if want := `"reason":null`; !strings.Contains(r.Stdout, l.dry) || !strings.Contains(r.Stdout, want) && !l.ownReason ||
					l.ownReason && !strings.Contains(r.Stdout, `"reason":`+string(reason)) {
					t.Errorf("the dry run does not print %q and its reason:\n%s", l.dry, r.Stdout)
				}
				// The exact preview: the whole command, --reason and --yes included, without
				// --execute prints the plan with its reason and changes nothing (replay resume
				// keeps its run's reason, and acts on --yes alone as it always did).
				full := append(append([]string{}, args...), "--reason", l.reason, "--yes")
				if l.ownReason {
					full = append(append([]string{}, args...), "--rate", "1000")
				}
				r = roottest.RunCode(t, w.env, 0, full...)
				if reason, _ := json.Marshal(l.reason); !strings.Contains(r.Stdout, l.dry) || !strings.Contains(r.Stdout, `"reason":`+string(reason)) {
					t.Errorf("the preview does not print %q and its reason %q:\n%s", l.dry, l.reason, r.Stdout)
				}
				r = roottest.RunCode(t, w.env, 0, append(full, "-o", "table")...)
				if !regexp.MustCompile(`(?m)^reason +` + regexp.QuoteMeta(l.reason) + `$`).MatchString(r.Stdout) {
					t.Errorf("the preview's table does not show the reason %q:\n%s", l.reason, r.Stdout)
				}
				exec = append(append([]string{}, args...), "--execute", "--reason", l.reason)
				if l.ownReason {
					exec = append(append([]string{}, args...), "--execute")
				}
			}
			unchanged := func(what string) {
				t.Helper()
				if got := l.journal(t); !slices.Equal(got, before) {
					t.Fatalf("%s: the journal changed:\n%s\nwas:\n%s", what, strings.Join(got, "\n"), strings.Join(before, "\n"))
				}
			}
			unchanged("the dry run")

			code, stderr := roottest.RunOnTerminal(t, w.env, "n\n", exec...)
			for _, want := range []string{"  plan     " + l.plan, "  reason   " + l.reason + "\n", l.question, "? [y/N] ", "cancelled: nothing was changed"} {
				if !strings.Contains(stderr, want) {
					t.Errorf("answered no: the prompt lacks %q:\n%s", want, stderr)
				}
			}
			if code != root.ExitCancelled {
				t.Fatalf("answered no: exit %d, want %d:\n%s", code, root.ExitCancelled, stderr)
			}
			unchanged("answered no")

			r := roottest.RunCode(t, w.env, root.ExitUsage, exec...)
			if !strings.Contains(r.Stderr, "without --yes") {
				t.Errorf("off a terminal without --yes: %s", r.Stderr)
			}
			unchanged("refused without --yes")

			roottest.RunCode(t, w.env, 0, append(exec, "--yes")...)
			after := l.journal(t)
			if !hasRow(after, l.row) || len(after) != len(before)+boolInt(!l.update) {
				t.Fatalf("--yes: the journal is\n%s\nwant it to gain %q", strings.Join(after, "\n"), l.row)
			}
		})
	}
}

// hasRow says whether a row of the journal ends with row (a replay run's starts with its id).
func hasRow(rows []string, row string) bool {
	return slices.ContainsFunc(rows, func(r string) bool { return strings.HasSuffix(r, row) })
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func newActionWorld(t *testing.T) *actionWorld {
	t.Helper()
	schema := testenv.PGSchema(t, "fwact_")
	w := &actionWorld{schema: schema,
		env: map[string]string{"FIELDWORK_BROKERS": testenv.Brokers(t), "FIELDWORK_DSN": testenv.DSN(t), "USER": "tester"}}
	roottest.RunCode(t, w.env, 0, "db", "migrate", "--schema", schema)
	st, err := dedup.Open(context.Background(), testenv.DSN(t), dedup.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	w.st = st
	return w
}

// replayJournal is the store's replay runs: id, status, operator, reason.
func replayJournal(w *actionWorld) func(t *testing.T) []string {
	return func(t *testing.T) []string {
		runs, err := w.st.ReplayRuns(context.Background(), dedup.ReplayRunFilter{})
		if err != nil {
			t.Fatal(err)
		}
		var rows []string
		for _, r := range runs {
			rows = append(rows, fmt.Sprintf("%s %s by %s: %s", r.ID, r.Status, r.Operator, r.Reason))
		}
		return rows
	}
}

// markerJournal is the store's journal of prunes and forgets.
func markerJournal(w *actionWorld) func(t *testing.T) []string {
	return func(t *testing.T) []string {
		as, err := w.st.MarkerActions(context.Background(), 100)
		if err != nil {
			t.Fatal(err)
		}
		var rows []string
		for _, a := range as {
			rows = append(rows, fmt.Sprintf("%s of %d by %s: %s", a.Action, a.Deleted, a.Operator, a.Reason))
		}
		return rows
	}
}

// groupJournal is the store's journal of groups skips, resets and undos.
func groupJournal(w *actionWorld) func(t *testing.T) []string {
	return func(t *testing.T) []string {
		as, err := w.st.GroupActions(context.Background(), 100)
		if err != nil {
			t.Fatal(err)
		}
		var rows []string
		for _, a := range as {
			rows = append(rows, fmt.Sprintf("%s of %s by %s: %s", a.Action, a.Group, a.Operator, a.Reason))
		}
		return rows
	}
}

// deadLetters writes one dead letter to dlqTopic for each original topic in origs.
func deadLetters(t *testing.T, dlqTopic string, origs ...string) {
	t.Helper()
	var dls []*kgo.Record
	for i, topic := range origs {
		o := &kgo.Record{Topic: topic, Partition: 0, Offset: int64(i), Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, `{"i":%d}`, i)}
		dls = append(dls, dlq.NewDeadLetter(o, dlq.Meta{Topic: dlqTopic, Reason: dlq.ReasonExhausted, Error: "db down", Group: "billing", EventID: fmt.Sprint("evt-", i)}))
	}
	testenv.Produce(t, testenv.Client(t), dls...)
}

func setupReplay(t *testing.T, w *actionWorld) actionLine {
	src, dlqTopic := testenv.Topic(t, 1, nil), testenv.Topic(t, 1, nil)
	deadLetters(t, dlqTopic, src, src, src)
	return actionLine{args: []string{"replay", "--topic", dlqTopic}, dryRun: true,
		dry: `"to_send":3`, plan: "3 to " + src, question: fmt.Sprintf("Send 3 records from %s (3 to %s)", dlqTopic, src),
		reason: "db is back", journal: replayJournal(w), row: "completed by tester: db is back"}
}

// setupReplayResume makes a failed run: its third dead letter names a topic that does not
// exist, so a single pass sends two and stops; the topic is created, and the run resumes.
func setupReplayResume(t *testing.T, w *actionWorld) actionLine {
	src, dlqTopic := testenv.Topic(t, 1, nil), testenv.Topic(t, 1, nil)
	missing := testenv.Name(t, "fwmissing")
	deadLetters(t, dlqTopic, src, src, missing, missing)
	r := roottest.RunCode(t, w.env, root.ExitNotFound, "replay", "--schema", w.schema, "--topic", dlqTopic, "--execute", "--yes", "--reason", "first try")
	m := regexp.MustCompile(`fieldwork replay resume (\S+)`).FindStringSubmatch(r.Stderr)
	if m == nil {
		t.Fatalf("no failed run to resume:\n%s", r.Stderr)
	}
	testenv.CreateTopic(t, missing, 1, nil)
	id := m[1]
	return actionLine{args: []string{"replay", "resume", id}, dryRun: true, ownReason: true, dry: `"to_send":2`,
		plan: "2 to " + missing, question: fmt.Sprintf("Resume run %s: send 2 records from %s (2 to %s)", id, dlqTopic, missing),
		reason: "first try", journal: replayJournal(w), row: id + " completed by tester: first try", update: true}
}

func setupPrune(t *testing.T, w *actionWorld) actionLine {
	hour := "3600000"
	topic := testenv.Topic(t, 1, map[string]*string{"retention.ms": &hour})
	old := time.Now().Add(-3 * time.Hour)
	err := w.st.InTx(context.Background(), func(tx *dedup.Tx) error {
		_, err := w.st.Claim(context.Background(), tx, "billing", []dedup.Marker{
			{EventID: "e1", Topic: topic, ProcessedAt: old}, {EventID: "e2", Topic: topic, ProcessedAt: old}, {EventID: "e3", Topic: topic}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return actionLine{args: []string{"processed", "prune", "--older-than", "2h", "--consumer", "billing"}, dryRun: true,
		dry: `"candidates":2`, plan: "2 markers recorded " + topic, question: "Delete 2 markers of consumer billing processed before ",
		reason: "quarterly cleanup", journal: markerJournal(w), row: "prune of 2 by tester: quarterly cleanup"}
}

func setupForget(t *testing.T, w *actionWorld) actionLine {
	err := w.st.InTx(context.Background(), func(tx *dedup.Tx) error {
		_, err := w.st.Claim(context.Background(), tx, "billing", []dedup.Marker{{EventID: "e1"}, {EventID: "e2"}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return actionLine{args: []string{"processed", "forget", "e1", "e2", "nope", "--consumer", "billing"}, dryRun: true,
		dry: `"not_found":["nope"],"dry_run":true`, plan: "2 markers found of 3 event ids of consumer billing", question: "Forget 2 markers of 3 events for consumer billing",
		reason: "fixed the tax rounding", journal: markerJournal(w), row: "forget of 2 by tester: fixed the tax rounding"}
}

// stuckGroup is a group without members committed at offset 1 of a topic of 4 records, and
// the topic's dead-letter topic.
func stuckGroup(t *testing.T) (group, topic string) {
	topic = testenv.Topic(t, 1, nil)
	testenv.CreateTopic(t, topic+".dlq", 1, nil)
	for i := range 4 {
		testenv.Produce(t, testenv.Client(t), &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "k%d", i), Value: []byte("v")})
	}
	return inspecttest.CommitGroup(t, topic, map[int32]int64{0: 1}), topic
}

func setupSkip(t *testing.T, w *actionWorld) actionLine {
	group, topic := stuckGroup(t)
	return actionLine{args: []string{"groups", "skip", group, "--topic", topic, "--partition", "0"}, dryRun: true,
		dry: `"committed_offset":1,"new_offset":2`, plan: "1 offset to " + topic + ".dlq", question: fmt.Sprintf("Park 1 record of %s/0 in %s.dlq and move consumer group %s from offset 1 to 2", topic, topic, group),
		reason: "INC-7: unparseable amount", journal: groupJournal(w), row: fmt.Sprintf("skip of %s by tester: INC-7: unparseable amount", group)}
}

func setupUndo(t *testing.T, w *actionWorld) actionLine {
	group, topic := stuckGroup(t)
	r := roottest.RunCode(t, w.env, 0, "groups", "skip", group, "--topic", topic, "--partition", "0", "--schema", w.schema,
		"--execute", "--yes", "--reason", "INC-7", "-o", "json")
	var skip struct {
		ID string `json:"run_id"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &skip); err != nil || skip.ID == "" {
		t.Fatalf("skip: %v\n%s", err, r.Stdout)
	}
	return actionLine{args: []string{"groups", "skip", "--undo", skip.ID}, dryRun: true,
		dry: `"moves":[{"partition":0,"committed_offset":2,"new_offset":1`, plan: fmt.Sprintf("group %s on %s/0: 2 → 1", group, topic), question: fmt.Sprintf("Move consumer group %s on %s back to where skip %s found it", group, topic, skip.ID),
		reason: "wrong group", journal: groupJournal(w), row: fmt.Sprintf("undo of %s by tester: wrong group", group)}
}

func setupReset(t *testing.T, w *actionWorld) actionLine {
	group, topic := stuckGroup(t)
	return actionLine{args: []string{"groups", "reset", group, "--to-earliest"}, dryRun: true,
		dry: `"committed_offset":1,"new_offset":0,"delta":-1`, plan: fmt.Sprintf("group %s on %s/0: 1 → 0", group, topic),
		question: fmt.Sprintf("Move consumer group %s to earliest on 1 partition", group),
		reason:   "INC-9: rebuild the projection", journal: groupJournal(w), row: fmt.Sprintf("reset of %s by tester: INC-9: rebuild the projection", group)}
}

func setupResetUndo(t *testing.T, w *actionWorld) actionLine {
	group, topic := stuckGroup(t)
	r := roottest.RunCode(t, w.env, 0, "groups", "reset", group, "--shift-by", "2", "--schema", w.schema,
		"--execute", "--yes", "--reason", "INC-9", "-o", "json")
	var reset struct {
		ID string `json:"run_id"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &reset); err != nil || reset.ID == "" {
		t.Fatalf("reset: %v\n%s", err, r.Stdout)
	}
	return actionLine{args: []string{"groups", "reset", "--undo", reset.ID}, dryRun: true,
		dry: `"moves":[{"topic":"` + topic + `","partition":0,"committed_offset":3,"new_offset":1`, plan: fmt.Sprintf("group %s on %s/0: 3 → 1", group, topic),
		question: fmt.Sprintf("Move consumer group %s on %s back to where reset %s found it", group, topic, reset.ID),
		reason:   "wrong group", journal: groupJournal(w), row: fmt.Sprintf("undo of %s by tester: wrong group", group)}
}
