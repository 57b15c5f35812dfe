package processed

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdtest"
	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/processed"
)

func TestProcessedGetFlags(t *testing.T) {
	f := cmdutil.TestFactory()
	got := cmdtest.Parse(t, f, NewCmdProcessedGet,
		"evt-1", "--consumer", "billing", "--schema", "app", "--table", "seen", "--column-event-id", "message_id")
	if got.EventID != "evt-1" || got.Consumer != "billing" {
		t.Fatalf("options = %+v", got)
	}
	n := got.Names()
	if n.Schema != "app" || n.Table != "seen" || n.Columns.EventID != "message_id" || n.Columns.Consumer != "consumer" || !n.CustomColumns() {
		t.Fatalf("names = %+v", n)
	}
}

func TestProcessedListFlags(t *testing.T) {
	f := cmdutil.TestFactory()
	var got *ProcessedListOptions
	at := time.Date(2025, 6, 1, 11, 59, 0, 0, time.UTC)
	cursor := encodeCursor(&dedup.Cursor{ProcessedAt: at, Consumer: "billing", EventID: "e9"})
	cmd := cmdtest.InGroup(f, func(f *cmdutil.Factory) *cobra.Command {
		return NewCmdProcessedList(f, func(_ context.Context, o *ProcessedListOptions) error { got = o; return nil })
	},
		"--consumer", "billing", "--since", "2h", "--until", "2099-06-01T11:30:00Z", "--aggregate", "task-1", "--limit", "7", "--cursor", cursor)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	fl := got.Filter
	if d := time.Since(fl.Since); d < 119*time.Minute || d > 121*time.Minute {
		t.Errorf("--since 2h = %v", fl.Since)
	}
	if fl.Consumer != "billing" || !fl.Until.Equal(time.Date(2099, 6, 1, 11, 30, 0, 0, time.UTC)) ||
		fl.AggregateID != "task-1" || fl.Limit != 7 || fl.Before == nil || fl.Before.EventID != "e9" || !fl.Before.ProcessedAt.Equal(at) {
		t.Fatalf("filter = %+v (before %+v)", fl, fl.Before)
	}

	// Defaults: limit 100, no filters.
	got = cmdtest.Parse(t, cmdutil.TestFactory(), NewCmdProcessedList)
	if got.Filter.Limit != 100 || got.Filter.Consumer != "" || got.Filter.Before != nil || !got.Filter.Since.IsZero() {
		t.Fatalf("defaults = %+v", got.Filter)
	}
}

func TestCursorRoundTrip(t *testing.T) {
	in := &dedup.Cursor{ProcessedAt: time.Date(2025, 1, 2, 3, 4, 5, 123456000, time.UTC), Consumer: "bïlling", EventID: "id with spaces/and+plus"}
	out, err := decodeCursor(encodeCursor(in))
	if err != nil || !out.ProcessedAt.Equal(in.ProcessedAt) || out.Consumer != in.Consumer || out.EventID != in.EventID {
		t.Fatalf("round trip: %+v %v", out, err)
	}
	// After a row without a processed time (another library's table may keep none): its time is
	// null, and the cursor still reads.
	none := &dedup.Cursor{Consumer: "c", EventID: "e"}
	if out, err := decodeCursor(encodeCursor(none)); err != nil || !out.ProcessedAt.IsZero() || *out != *none {
		t.Fatalf("round trip of a cursor without a time: %+v %v", out, err)
	}
	for _, bad := range []string{"", "!!!", "e30", "eyJ0IjoiMDAwMS0wMS0wMVQwMDowMDowMFoiLCJjIjoiYyIsImUiOiJlIn0"} {
		if _, err := decodeCursor(bad); fwerr.KindOf(err) != fwerr.KindUsage {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestProcessedStatsFlags(t *testing.T) {
	f := cmdutil.TestFactory()
	got := cmdtest.Parse(t, f, NewCmdProcessedStats, "--window", "7d", "--consumer", "billing")
	if got.Filter.Window != 7*24*time.Hour || got.Filter.Consumer != "billing" {
		t.Fatalf("filter = %+v", got.Filter)
	}
	got = cmdtest.Parse(t, cmdutil.TestFactory(), NewCmdProcessedStats)
	if got.Filter.Window != 24*time.Hour {
		t.Fatalf("default window: %v", got.Filter.Window)
	}
}

func TestProcessedCheckFlags(t *testing.T) {
	f := cmdutil.TestFactory()
	got := cmdtest.Parse(t, f, NewCmdProcessedCheck,
		"--topic", "tasks", "--consumer", "billing", "--partition", "0,2", "--start-offset", "10", "--end-offset", "20", "--max-missing", "5", "--max-malformed-share", "0.1")
	sel := got.Selection
	if got.Topic != "tasks" || got.Consumer != "billing" || got.MaxMissing != 5 || got.MaxMalformedShare != 0.1 || len(sel.Partitions) != 2 || *sel.StartOffset != 10 || *sel.EndOffset != 20 {
		t.Fatalf("options = %+v, selection %+v", got, sel)
	}
	got = cmdtest.Parse(t, cmdutil.TestFactory(), NewCmdProcessedCheck,
		"--topic", "tasks", "--consumer", "billing", "--since", "90m")
	if d := time.Since(got.Selection.Since); d < 89*time.Minute || d > 91*time.Minute || got.MaxMissing != processed.DefaultMaxMissing || got.MaxMalformedShare != processed.DefaultMaxMalformedShare {
		t.Fatalf("since = %v, max missing %d", got.Selection.Since, got.MaxMissing)
	}
}

func TestProcessedPruneFlags(t *testing.T) {
	f := cmdutil.TestFactory()
	got := cmdtest.Parse(t, f, NewCmdProcessedPrune,
		"--older-than", "1d12h", "--consumer", "billing", "--batch-size", "500", "--topic", "a,b", "--topic", "c", "--force", "--yes")
	if got.OlderThan != 36*time.Hour || got.Consumer != "billing" || got.BatchSize != 500 || strings.Join(got.Topics, " ") != "a b c" || !got.Force || !got.Yes {
		t.Fatalf("options = %+v", got)
	}
	got = cmdtest.Parse(t, cmdutil.TestFactory(), NewCmdProcessedPrune, "--older-than", "720h")
	if got.OlderThan != 30*24*time.Hour || got.BatchSize != dedup.DefaultPruneBatch || got.Force || got.Yes || got.Topics != nil {
		t.Fatalf("defaults = %+v", got)
	}
}

func TestProcessedForgetFlags(t *testing.T) {
	f := cmdutil.TestFactory()
	got := cmdtest.Parse(t, f, NewCmdProcessedForget,
		"e1", "e2", "e1", "--consumer", "billing")
	if strings.Join(got.EventIDs, " ") != "e1 e2" || got.Consumer != "billing" || got.AllConsumers || got.Yes {
		t.Fatalf("options = %+v", got)
	}

	// --from-file - reads stdin (and needs --yes).
	f = cmdutil.TestFactory()
	f.Streams.In = strings.NewReader("  e3 \n\n e4\r\ne3\n")
	got = cmdtest.Parse(t, f, NewCmdProcessedForget, "--from-file", "-", "--all-consumers", "--yes")
	if strings.Join(got.EventIDs, " ") != "e3 e4" || !got.AllConsumers || got.Consumer != "" {
		t.Fatalf("options = %+v", got)
	}
}

func TestReadIDs(t *testing.T) {
	ids, err := readIDs("-", strings.NewReader("a\n\n  b  \r\nc"))
	if err != nil || strings.Join(ids, ",") != "a,b,c" {
		t.Fatalf("ids = %q, %v", ids, err)
	}
	if _, err := readIDs("-", strings.NewReader("\n \n")); fwerr.KindOf(err) != fwerr.KindUsage || !strings.Contains(err.Error(), "no event ids in stdin") {
		t.Errorf("empty: %v", err)
	}
	if _, err := readIDs("-", strings.NewReader("ok\nbad\x00id\n")); fwerr.KindOf(err) != fwerr.KindUsage || !strings.Contains(err.Error(), "stdin line 2") {
		t.Errorf("NUL: %v", err)
	}
	if _, err := readIDs("-", strings.NewReader("ok\n"+strings.Repeat("x", maxIDLine+1))); fwerr.KindOf(err) != fwerr.KindUsage || !strings.Contains(err.Error(), "stdin line 2: longer than 16 MiB") {
		t.Errorf("a line too long: %v", err)
	}
}
