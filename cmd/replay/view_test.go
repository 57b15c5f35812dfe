package replay

import (
	"strings"
	"testing"

	"github.com/olekukonko/tablewriter/pkg/twwidth"

	"github.com/fieldwork/fieldwork/cmd/cmdtest"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/output"
	"github.com/fieldwork/fieldwork/internal/replay"
)

// TestPlanSampleKeysFitTheTerminal: a sample record's long key is cut, with the ellipsis, to
// what the terminal leaves it, not to a fixed length: more of it on a wider terminal, all of
// it with --wide or off a terminal, and no line of the table wider than the terminal; the
// partition and the replay count are left out before the record is cut.
func TestPlanSampleKeysFitTheTerminal(t *testing.T) {
	key := "tenant-0042/order/" + strings.Repeat("k", 100) + "-end"
	rep := &replay.Report{Sample: []replay.SampleRecord{
		{RecordAddress: kafka.RecordAddress{Topic: "orders.dlq", Partition: 0, Offset: 7}, Outcome: "send", TargetTopic: "orders", Key: key, EventID: "e-1", Reason: "rejected"},
	}}
	render := func(tty bool, width int, wide bool) (keyShown string, lines []string) {
		t.Helper()
		s, _, out, _ := output.Test()
		s.OutTTY, s.Width = tty, width
		p := output.NewPrinter(s, output.FormatTable)
		p.Wide = wide
		var sample output.Section
		for _, sec := range replayPlanSections(p, rep, false) {
			if strings.HasPrefix(sec.Title, "Sample") {
				sample = sec
			}
		}
		if err := p.Object(rep, []output.Section{sample}); err != nil {
			t.Fatal(err)
		}
		lines = strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
		for _, f := range strings.Fields(lines[len(lines)-1]) {
			if strings.HasPrefix(f, "tenant-0042") {
				keyShown = f
			}
		}
		return keyShown, lines
	}
	at80, lines := render(true, 80, false)
	for _, l := range lines {
		if w := twwidth.Width(l); w > 80 {
			t.Errorf("a line %d columns wide at 80: %q", w, l)
		}
	}
	if !strings.Contains(lines[len(lines)-1], "orders.dlq/0/7  send") {
		t.Errorf("at 80 columns the record or its outcome is cut (the partition and replay count go first):\n%s", strings.Join(lines, "\n"))
	}
	at160, _ := render(true, 160, false)
	if !strings.HasSuffix(at80, output.Ellipsis) || !strings.HasSuffix(at160, output.Ellipsis) || twwidth.Width(at160) <= twwidth.Width(at80) ||
		twwidth.Width(at160) <= 40 {
		t.Errorf("the key at 80 columns %q, at 160 %q: want each cut to its terminal, more at 160 (and more than 40 columns)", at80, at160)
	}
	for name, got := range map[string]string{"--wide": first(render(true, 80, true)), "off a terminal": first(render(false, 0, false))} {
		if got != key {
			t.Errorf("%s: the key is %q, want it whole", name, got)
		}
	}
}

func first(s string, _ []string) string { return s }

// TestConsolePlanWords: the plan the console shows names the records it selects by address
// as named, not as a file, and says its guards' warnings follow the plan (the console has no
// stderr); the command's plan says stderr.
func TestConsolePlanWords(t *testing.T) {
	rep := &replay.Report{Source: "tasks.dlq", Selection: replay.SelectionReport{Source: "tasks.dlq", Addresses: 1},
		Guards: []replay.Notice{{Text: "old"}}}
	render := func(f func(p *output.Printer) error) string {
		s, _, out, _ := output.Test()
		if err := f(output.NewPrinter(s, output.FormatTable)); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	console := render(func(p *output.Printer) error { return RenderPlan(p, rep) })
	for _, want := range []string{"named    1 address", "guards", "(their warnings follow the plan)"} {
		if !strings.Contains(console, want) {
			t.Errorf("the console's plan lacks %q:\n%s", want, console)
		}
	}
	if strings.Contains(console, "from file") || strings.Contains(console, "stderr") {
		t.Errorf("the console's plan speaks of a file or stderr:\n%s", console)
	}
	cmd := render(func(p *output.Printer) error { return p.Object(rep, replayPlanSections(p, rep, false)) })
	if !strings.Contains(cmd, "(warnings on stderr; --strict refuses)") {
		t.Errorf("the command's plan:\n%s", cmd)
	}
	if got := namedLabel(2, 3); got != "2 addresses, 3 event ids" {
		t.Errorf("namedLabel(2, 3) = %q", got)
	}
}

// TestWorkersRunSummary: a run recorded for workers (--workers) has sent nothing and counted
// nothing: its summary says the workers send it, not "selected 0"; an executed run keeps its
// counts.
func TestWorkersRunSummary(t *testing.T) {
	render := func(sum *replay.Summary) string {
		s, _, out, _ := output.Test()
		p := output.NewPrinter(s, output.FormatTable)
		if err := p.Object(sum, replaySummarySections(p, sum)); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	keyed, agree := int64(12), int64(12)
	choices := []replay.PartitionerChoice{
		{Topic: "tasks", Partitioner: "crc32", By: replay.ByInferred, KeyedRecords: &keyed, Agree: &agree, Why: "12 of 12 keyed records of tasks agree"},
		{Topic: "audit", Partitioner: "fnv1a", By: replay.ByFlag, Why: "--partitioner"},
	}
	planned := render(&replay.Summary{RunID: "r1", Status: dedup.RunPlanned, Source: "tasks.dlq", Target: "original", PartitionerChoices: choices})
	if !strings.Contains(planned, "none yet (the workers send it)") || strings.Contains(planned, "selected") || strings.Contains(planned, "this attempt") ||
		!strings.Contains(planned, "crc32 (inferred: 12 of 12 keyed records of tasks agree)") {
		t.Errorf("the summary of a run recorded for workers:\n%s", planned)
	}
	done := render(&replay.Summary{RunID: "r2", Status: dedup.RunCompleted, Counts: dedup.RunCounts{Selected: 5, Sent: 5, Quarantined: 1}, PartitionerChoices: choices})
	if strings.Count(done, "partitioner") != 1 {
		t.Errorf("the summary of a completed run: want one partitioner line (the inferred one):\n%s", done)
	}
	for _, want := range []string{"selected 5", "sent 5", "quarantined 1", "this attempt", "partitioner crc32 (inferred: 12 of 12 keyed records of tasks agree)"} {
		if !strings.Contains(strings.Join(strings.Fields(done), " "), want) {
			t.Errorf("the summary of a completed run lacks %q:\n%s", want, done)
		}
	}
}

// TestRunShowsItsPartitioners: replay show says the partitioners a run journaled for its
// targets, as the run's summary said them; a run that chose none (or journaled by an earlier
// version, or with a selection that is no spec) shows no partitioner line.
func TestRunShowsItsPartitioners(t *testing.T) {
	render := func(selection string) string {
		s, _, out, _ := output.Test()
		p := output.NewPrinter(s, output.FormatTable)
		d := replayRunDetail{ReplayRun: dedup.ReplayRun{ID: "r1", Status: dedup.RunInterrupted, Selection: dedup.JSONText(selection)}}
		if err := p.Object(d, replayRunSections(p, d)); err != nil {
			t.Fatal(err)
		}
		return strings.Join(strings.Fields(out.String()), " ")
	}
	chose := render(`{"topic":"tasks.dlq","to_partition":"auto","max_replays":3,"partitioners":[` +
		`{"topic":"tasks","partitioner":"fnv1a","by":"inferred","keyed_records":12,"agree":12,"matching":["fnv1a"],"replayed_records":0,"why":"12 of 12 keyed records of tasks agree"}]}`)
	if !strings.Contains(chose, "partitioner fnv1a (inferred: 12 of 12 keyed records of tasks agree)") {
		t.Errorf("a run that inferred a partitioner:\n%s", chose)
	}
	for _, sel := range []string{`{"topic":"tasks.dlq","to_partition":"auto","max_replays":3}`, `not a spec`} {
		if got := render(sel); strings.Contains(got, "partitioner") {
			t.Errorf("selection %s: want no partitioner line:\n%s", sel, got)
		}
	}
}

// The runs' CSV columns are the JSON fields: run_id, source_topics.
func TestReplayRunsCSVNamesJSONFields(t *testing.T) {
	cmdtest.CSVColumnsAreJSONFields(t, replayRunColumns, dedup.ReplayRun{ID: "r", Sources: []string{"t.dlq"}, Reason: "x"})
}
