package dlq

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/schema"
)

// aheadTestRecords is every fixture record, and each again framed for a schema registry, over and
// over at increasing offsets of two partitions: enough records for many batches.
func aheadTestRecords(t *testing.T, n int) []*kgo.Record {
	t.Helper()
	var base []*kgo.Record
	for _, name := range fixtureFiles(t) {
		for _, fx := range loadFixtures(t, name) {
			base = append(base, fx.Record.record(t))
			framed := fx.Record.record(t)
			framed.Value = append([]byte{0, 0, 0, 0, 42}, framed.Value...)
			base = append(base, framed)
		}
	}
	out := make([]*kgo.Record, 0, n)
	for i := range n {
		r := *base[i%len(base)]
		r.Topic, r.Partition, r.Offset = "ahead.dlq", int32(i/(n/2)), int64(i)
		out = append(out, &r)
	}
	return out
}

// aheadRun is what a read handed on: each dead letter's line (Entry.AppendJSON, taken while
// the callback has it), the counts, the progress calls, the error, and the decoder's
// problems.
type aheadRun struct {
	lines    [][]byte
	res      ScanResult
	progress []int64
	err      error
	problems []string
}

// runAheadCase reads recs through a scan with opts, in order on one goroutine (ahead false:
// as Scan.read does) or through workers, stopping with ErrStop after stopAt dead letters
// (0: never) and ending with readErr, as a read that failed.
func runAheadCase(t *testing.T, recs []*kgo.Record, opts ScanOptions, f Filter, ahead bool, enc aheadJSON, stopAt int, readErr error) aheadRun {
	t.Helper()
	ctx := context.Background()
	var run aheadRun
	dec, err := schema.New(schema.Config{})
	if err != nil {
		t.Fatal(err)
	}
	opts.Schemas = dec
	opts.Progress = func(done, _ int64) { run.progress = append(run.progress, done) }
	s := &Scan{opts: opts}
	fn := func(d DeadLetter) error {
		line, err := Entry{DeadLetter: d}.AppendJSON(nil)
		if err != nil {
			return err
		}
		run.lines = append(run.lines, line)
		if stopAt > 0 && len(run.lines) == stopAt {
			return ErrStop
		}
		return nil
	}
	if !ahead {
		read := s.reader()
		for _, r := range recs {
			run.res.Read++
			if run.res.Read%progressEvery == 0 {
				opts.Progress(run.res.Read, 0)
			}
			d := read(ctx, r)
			if !f.Match(&d) {
				continue
			}
			run.res.Matched++
			if run.err = fn(d); run.err != nil {
				break
			}
		}
		if run.err == nil {
			run.err = readErr
		}
	} else {
		a := newAheadReader(ctx, s, 2, f, enc, &run.res, fn)
		for _, r := range recs {
			if err := a.add(r); err != nil {
				break
			}
		}
		run.err = a.end(readErr)
		a.close()
	}
	for _, p := range dec.Problems() {
		run.problems = append(run.problems, p.Error())
	}
	return run
}

// TestReadAhead: a read through workers hands the callback the same dead letters, with the
// same JSON, in the same order, with the same counts, progress, errors and schema problems,
// as a read that parses each record on the scanning goroutine: every convention, framed
// payloads (decoded in order), a filter, a stop, a failed read, and the parse options of
// dlq stats.
func TestReadAhead(t *testing.T) {
	recs := aheadTestRecords(t, 9000)
	readErr := errors.New("the read failed")
	cases := []struct {
		name    string
		opts    ScanOptions
		f       Filter
		stopAt  int
		readErr error
	}{
		{name: "all", opts: ScanOptions{InOrder: true}},
		{name: "filtered", f: Filter{Reasons: []string{ReasonRejected, ReasonUnknown}}},
		{name: "stopped", stopAt: 3001},
		{name: "stopped at once", stopAt: 1},
		{name: "failed", readErr: readErr},
		{name: "stats", opts: ScanOptions{Parse: ParseOptions{NoEnvelope: true, NoHeaders: true, NoTimes: true}}},
	}
	for _, c := range cases {
		for _, enc := range []aheadJSON{aheadNoJSON, aheadJSONKept, aheadJSONReused} {
			t.Run(fmt.Sprintf("%s/json%d", c.name, enc), func(t *testing.T) {
				want := runAheadCase(t, recs, c.opts, c.f, false, enc, c.stopAt, c.readErr)
				got := runAheadCase(t, recs, c.opts, c.f, true, enc, c.stopAt, c.readErr)
				if got.res != want.res {
					t.Errorf("result %+v, want %+v", got.res, want.res)
				}
				if !errors.Is(got.err, want.err) || (got.err == nil) != (want.err == nil) {
					t.Errorf("error %v, want %v", got.err, want.err)
				}
				if fmt.Sprint(got.progress) != fmt.Sprint(want.progress) {
					t.Errorf("progress %v, want %v", got.progress, want.progress)
				}
				if fmt.Sprint(got.problems) != fmt.Sprint(want.problems) || c.stopAt == 0 && len(want.problems) == 0 {
					t.Errorf("schema problems %q, want %q (some)", got.problems, want.problems)
				}
				if len(got.lines) != len(want.lines) {
					t.Fatalf("%d dead letters, want %d", len(got.lines), len(want.lines))
				}
				for i := range want.lines {
					if !bytes.Equal(got.lines[i], want.lines[i]) {
						t.Fatalf("dead letter %d:\n%s\nwant\n%s", i, got.lines[i], want.lines[i])
					}
				}
			})
		}
	}
}

// TestReadAheadJSONKept: with aheadJSONKept, a dead letter's JSON written ahead stays its own
// after the callback returns (a status batch holds dead letters before they are written).
func TestReadAheadJSONKept(t *testing.T) {
	recs := aheadTestRecords(t, 3000)
	s := &Scan{opts: ScanOptions{}}
	var kept []DeadLetter
	var res ScanResult
	a := newAheadReader(context.Background(), s, 2, Filter{}, aheadJSONKept, &res, func(d DeadLetter) error {
		kept = append(kept, d)
		return nil
	})
	for _, r := range recs {
		if err := a.add(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.end(nil); err != nil {
		t.Fatal(err)
	}
	a.close()
	ahead := 0
	for i, d := range kept {
		if d.ahead != nil {
			ahead++
		}
		got, err := Entry{DeadLetter: d}.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		d.ahead = nil
		want, err := Entry{DeadLetter: d}.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("dead letter %d kept:\n%s\nwant\n%s", i, got, want)
		}
	}
	if ahead == 0 {
		t.Error("no dead letter's JSON was written ahead")
	}
}
