package processed

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/cmd/cmdtest"
	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/fwerr"
)

func TestProcessedGetFlags(t *testing.T) {
	f := cmdutil.TestFactory()
	var got *ProcessedGetOptions
	cmd := cmdtest.InGroup(f, NewCmdProcessedGet(f, func(_ context.Context, o *ProcessedGetOptions) error { got = o; return nil }),
		"evt-1", "--consumer", "billing", "--schema", "app", "--table", "seen", "--column-event-id", "message_id")
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.EventID != "evt-1" || got.Consumer != "billing" {
		t.Fatalf("options = %+v", got)
	}
	n := got.Names()
	if n.Schema != "app" || n.Table != "seen" || n.Columns.EventID != "message_id" || n.Columns.Consumer != "consumer" || !cmdutil.CustomColumns(n) {
		t.Fatalf("names = %+v", n)
	}
}

func TestProcessedListFlags(t *testing.T) {
	f := cmdutil.TestFactory()
	var got *ProcessedListOptions
	at := time.Date(2025, 6, 1, 11, 59, 0, 0, time.UTC)
	cursor := encodeCursor(&dedup.Cursor{ProcessedAt: at, Consumer: "billing", EventID: "e9"})
	cmd := cmdtest.InGroup(f, NewCmdProcessedList(f, func(_ context.Context, o *ProcessedListOptions) error { got = o; return nil }),
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
	f = cmdutil.TestFactory()
	cmd = cmdtest.InGroup(f, NewCmdProcessedList(f, func(_ context.Context, o *ProcessedListOptions) error { got = o; return nil }))
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
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
	for _, bad := range []string{"", "!!!", "e30", encodeCursor(&dedup.Cursor{Consumer: "c", EventID: "e"})} {
		if _, err := decodeCursor(bad); fwerr.KindOf(err) != fwerr.KindUsage {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestProcessedStatsFlags(t *testing.T) {
	f := cmdutil.TestFactory()
	var got *ProcessedStatsOptions
	cmd := cmdtest.InGroup(f, NewCmdProcessedStats(f, func(_ context.Context, o *ProcessedStatsOptions) error { got = o; return nil }), "--window", "7d", "--consumer", "billing")
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Filter.Window != 7*24*time.Hour || got.Filter.Consumer != "billing" {
		t.Fatalf("filter = %+v", got.Filter)
	}
	f = cmdutil.TestFactory()
	cmd = cmdtest.InGroup(f, NewCmdProcessedStats(f, func(_ context.Context, o *ProcessedStatsOptions) error { got = o; return nil }))
	if err := cmd.Execute(); err != nil || got.Filter.Window != 24*time.Hour {
		t.Fatalf("default window: %v %v", got.Filter.Window, err)
	}
}

func TestProcessedCheckFlags(t *testing.T) {
	f := cmdutil.TestFactory()
	var got *ProcessedCheckOptions
	cmd := cmdtest.InGroup(f, NewCmdProcessedCheck(f, func(_ context.Context, o *ProcessedCheckOptions) error { got = o; return nil }),
		"--topic", "tasks", "--consumer", "billing", "--partition", "0,2", "--start-offset", "10", "--end-offset", "20", "--max-missing", "5")
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	sel := got.Selection
	if got.Topic != "tasks" || got.Consumer != "billing" || got.MaxMissing != 5 || len(sel.Partitions) != 2 || *sel.StartOffset != 10 || *sel.EndOffset != 20 {
		t.Fatalf("options = %+v, selection %+v", got, sel)
	}
	f = cmdutil.TestFactory()
	cmd = cmdtest.InGroup(f, NewCmdProcessedCheck(f, func(_ context.Context, o *ProcessedCheckOptions) error { got = o; return nil }),
		"--topic", "tasks", "--consumer", "billing", "--since", "90m")
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(got.Selection.Since); d < 89*time.Minute || d > 91*time.Minute || got.MaxMissing != defaultMaxMissing {
		t.Fatalf("since = %v, max missing %d", got.Selection.Since, got.MaxMissing)
	}
}

func TestProcessedPruneFlags(t *testing.T) {
	f := cmdutil.TestFactory()
	var got *ProcessedPruneOptions
	cmd := cmdtest.InGroup(f, NewCmdProcessedPrune(f, func(_ context.Context, o *ProcessedPruneOptions) error { got = o; return nil }),
		"--older-than", "1d12h", "--consumer", "billing", "--batch-size", "500", "--topic", "a,b", "--topic", "c", "--force", "--yes")
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.OlderThan != 36*time.Hour || got.Consumer != "billing" || got.BatchSize != 500 || strings.Join(got.Topics, " ") != "a b c" || !got.Force || !got.Yes {
		t.Fatalf("options = %+v", got)
	}
	f = cmdutil.TestFactory()
	cmd = cmdtest.InGroup(f, NewCmdProcessedPrune(f, func(_ context.Context, o *ProcessedPruneOptions) error { got = o; return nil }), "--older-than", "720h")
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.OlderThan != 30*24*time.Hour || got.BatchSize != dedup.DefaultPruneBatch || got.Force || got.Yes || got.Topics != nil {
		t.Fatalf("defaults = %+v", got)
	}
}

func TestProcessedForgetFlags(t *testing.T) {
	f := cmdutil.TestFactory()
	var got *ProcessedForgetOptions
	cmd := cmdtest.InGroup(f, NewCmdProcessedForget(f, func(_ context.Context, o *ProcessedForgetOptions) error { got = o; return nil }),
		"e1", "e2", "e1", "--consumer", "billing")
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.EventIDs, " ") != "e1 e2" || got.Consumer != "billing" || got.AllConsumers || got.Yes {
		t.Fatalf("options = %+v", got)
	}

	// --from-file - reads stdin (and needs --yes).
	f = cmdutil.TestFactory()
	f.Streams.In = strings.NewReader("  e3 \n\n e4\r\ne3\n")
	cmd = cmdtest.InGroup(f, NewCmdProcessedForget(f, func(_ context.Context, o *ProcessedForgetOptions) error { got = o; return nil }),
		"--from-file", "-", "--all-consumers", "--yes")
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.EventIDs, " ") != "e3 e4" || !got.AllConsumers || got.Consumer != "" {
		t.Fatalf("options = %+v", got)
	}
}

// TestGapFinderBatches checks that lookups go out in batches of at most the batch size while
// records stream in, that duplicates within a batch count per record, and the counts.
func TestGapFinderBatches(t *testing.T) {
	marked := map[string]bool{}
	for i := 0; i < 2500; i += 2 {
		marked[fmt.Sprintf("e%d", i)] = true
	}
	var calls []int
	rep := &checkReport{}
	var missing []checkRecord
	g := &gapFinder{
		lookup: func(_ context.Context, ids []string) (map[string]dedup.MarkerRow, error) {
			calls = append(calls, len(ids))
			out := map[string]dedup.MarkerRow{}
			for _, id := range ids {
				if marked[id] {
					out[id] = dedup.MarkerRow{EventID: id}
				}
			}
			return out, nil
		},
		onMissing: func(r checkRecord) error { missing = append(missing, r); return nil },
		batchSize: 1000,
		rep:       rep,
	}
	ctx := context.Background()
	for i := 0; i < 2500; i++ {
		value := fmt.Sprintf(`{"specversion":"1.0","id":"e%d","type":"t","source":"s"}`, i)
		if i == 7 {
			value = `not an event`
		}
		if err := g.add(ctx, &kgo.Record{Topic: "tasks", Partition: int32(i % 3), Offset: int64(i), Value: []byte(value)}); err != nil {
			t.Fatal(err)
		}
	}
	// a redelivery of a marked and of a missing event
	for _, id := range []string{"e0", "e1"} {
		_ = g.add(ctx, &kgo.Record{Topic: "tasks", Offset: 9999, Value: []byte(`{"specversion":"1.0","id":"` + id + `","type":"t","source":"s"}`)})
	}
	if err := g.flush(ctx); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(calls) != "[1000 1000 501]" {
		t.Errorf("lookup batches = %v", calls)
	}
	if rep.Records != 2502 || rep.Malformed != 1 || rep.Events != 2501 || rep.WithMarker != 1251 || rep.Missing != 1250 || int64(len(missing)) != rep.Missing {
		t.Errorf("counts = %+v, %d missing emitted", rep, len(missing))
	}
	if missing[0].EventID != "e1" || missing[0].Offset != 1 || missing[0].Partition != 1 {
		t.Errorf("first missing = %+v", missing[0])
	}
	if rep.MalformedExamples[0].Offset != 7 {
		t.Errorf("malformed = %+v", rep.MalformedExamples)
	}

	// A lookup failure stops the scan with that error.
	boom := errors.New("boom")
	g.lookup = func(context.Context, []string) (map[string]dedup.MarkerRow, error) { return nil, boom }
	g.batchSize = 1
	if err := g.add(ctx, &kgo.Record{Value: []byte(`{"event_id":"x"}`)}); !errors.Is(err, boom) {
		t.Errorf("lookup error = %v", err)
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
}
