package dlq

import (
	"bytes"
	"math/rand/v2"
	"regexp"
	"testing"
	"time"

	"github.com/fieldwork/fieldwork/internal/envelope"
	"github.com/fieldwork/fieldwork/internal/timespec"
)

// jsonTimes are the time members of a dead letter's JSON.
var jsonTimes = regexp.MustCompile(`"(timestamp|original_timestamp|first_failed_at|failed_at)":"([^"]*)"`)

// checkAppendJSON fails unless the hand encoder writes d exactly as encoding/json does, its
// times in fieldwork's one JSON form (timespec.TimeLayout) as the output layer rewrites them.
func checkAppendJSON(t *testing.T, d DeadLetter) {
	t.Helper()
	want, werr := d.marshalReflect(nil)
	want = jsonTimes.ReplaceAllFunc(want, func(m []byte) []byte {
		sub := jsonTimes.FindSubmatch(m)
		tm, err := time.Parse(time.RFC3339Nano, string(sub[2]))
		if err != nil {
			t.Fatalf("encoding/json wrote %s", m)
		}
		return []byte(`"` + string(sub[1]) + `":"` + timespec.FormatTime(tm) + `"`)
	})
	got, gerr := d.appendJSON([]byte("prefix"))
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("errors differ: hand %v, encoding/json %v", gerr, werr)
	}
	if werr != nil {
		return
	}
	if !bytes.Equal(got, append([]byte("prefix"), want...)) {
		t.Fatalf("hand encoder\n got %s\nwant prefix%s", got, want)
	}
}

// TestAppendJSON holds the hand encoder to encoding/json on what is hard to write: every
// escape, HTML characters, line and paragraph separators, invalid UTF-8 (text and base64),
// nil and empty bytes, unknown pointers, times in zones and outside what RFC 3339 can say, the
// fields left out when empty.
func TestAppendJSON(t *testing.T) {
	hard := []string{"", "plain", "quote \" back \\ slash", "<a href='x'>&amp;</a>", "\b\f\n\r\t\x00\x01\x1f\x7f", "del \x7f", "tab\tnl\ncr\r", "nul \x00", "bs \b ff \f", "cr \r", "c1 \u0085 \u009f", "bidi \u202e \u2066 \u200f \u061c",
		"line\u2028para\u2029", "é 日本 🎉", "bad \xff\xfe utf8 \xc3", "\xe2\x80", "trunc \xf0\x9f\x8e"}
	p, o := int32(7), int64(-3)
	zone := time.FixedZone("", -(5*3600 + 30*60))
	times := []time.Time{{}, time.Date(2026, 3, 14, 9, 26, 53, 589793238, zone), time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	// Times time.Time.MarshalJSON refuses: both encoders fail.
	for _, bad := range []time.Time{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", 24*3600+60))} {
		if _, err := (DeadLetter{Timestamp: bad}).marshalReflect(nil); err == nil {
			t.Fatalf("encoding/json wrote %v", bad)
		}
		checkAppendJSON(t, DeadLetter{Timestamp: bad})
		checkAppendJSON(t, DeadLetter{FailedAt: &bad})
	}
	for i, s := range hard {
		tm := times[i%len(times)]
		d := DeadLetter{
			Topic: s, Partition: int32(i), Offset: int64(i) * 1e12, Timestamp: tm, Convention: Convention(s),
			OriginalTopic: s, Group: s, Handler: s, Reason: s, ErrorClass: s, ErrorMessage: s, StackTrace: s,
			Attempts: i, EventID: s, Key: []byte(s), Value: []byte(s), ValueOmitted: s, ValueBytes: int64(i),
			ReplayCount: i,
			Headers:     []envelope.Header{{Key: s, Value: []byte(s)}, {Key: "", Value: nil}, {Key: s, Value: []byte{}}},
		}
		checkAppendJSON(t, d)
		d.OriginalPartition, d.OriginalOffset, d.OriginalTimestamp, d.FirstFailedAt, d.FailedAt = &p, &o, &tm, &tm, &times[1]
		d.HeaderProblems = []HeaderProblem{{Header: s, Problem: s}, {}}
		checkAppendJSON(t, d)
		checkAppendJSON(t, DeadLetter{Timestamp: tm, Key: []byte{}, Value: nil})
		for i, st := range []Status{"", StatusPending, Status(s)} {
			e := Entry{DeadLetter: d, Status: StatusInfo{Status: st}}
			var status *Status
			if st != "" {
				status = &st
			}
			if i == 2 {
				e.Status.Replay = &ReplayRef{RunID: s, At: tm, TargetTopic: s, TargetPartition: 1, TargetOffset: 2}
			}
			want, werr := appendJSONFields(nil, d, jsonField{"status", status}, jsonField{"last_replay", e.Status.Replay})
			got, gerr := e.AppendJSON(nil)
			if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
				t.Fatalf("entry with status %q:\n got %s %v\nwant %s %v", st, got, gerr, want, werr)
			}
		}
	}
}

// appendJSONTime writes, digit by digit, what it wrote through timespec.TimeLayout, for times
// in and out of UTC and at the edges of the years it takes; and fails where that failed.
func TestAppendJSONTimeAsLayout(t *testing.T) {
	zones := []*time.Location{time.UTC, time.Local, time.FixedZone("east", 14*3600), time.FixedZone("west", -(11*3600 + 30*60)),
		time.FixedZone("day", -(23*3600 + 59*60)), time.FixedZone("far", 30*3600)}
	times := []time.Time{
		time.Date(9999, 12, 31, 23, 0, 0, 0, time.FixedZone("e", -5*3600)), time.Date(0, 1, 1, 1, 0, 0, 0, time.FixedZone("w", 5*3600)),
		time.Date(2026, 11, 26, 14, 54, 12, 908523217, time.UTC), time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 12, 31, 23, 0, 0, 0, time.UTC), time.UnixMilli(1795704854908), {},
	}
	for i := range 2000 {
		times = append(times, time.Unix(int64(i)*7919*104729, int64(i)*999331))
	}
	// Instants of every year 0 to 9999 and just beyond, and the hours around the ends of the
	// years 0, 1, 9999 and 10000 (unixDays and civil work out the calendar).
	rng := rand.New(rand.NewPCG(3, 4))
	lo, hi := year0Unix-2*86400, year10000Unix+2*86400
	for range 50000 {
		times = append(times, time.Unix(lo+rng.Int64N(hi-lo), rng.Int64N(1e9)))
	}
	for _, edge := range []int64{year0Unix, year0Unix + 366*86400, year10000Unix - 365*86400, year10000Unix} {
		for h := int64(-30); h <= 30; h++ {
			times = append(times, time.Unix(edge+h*3600-1, 999999999), time.Unix(edge+h*3600, 0))
		}
	}
	for _, base := range times {
		for _, z := range zones {
			tm := base.In(z)
			got, err := appendJSONTime(nil, tm)
			want, werr := appendJSONTimeByLayout(nil, tm)
			if (err != nil) != (werr != nil) || !bytes.Equal(got, want) {
				t.Fatalf("%v: %s (%v), want %s (%v)", tm, got, err, want, werr)
			}
		}
	}
}

// appendJSONTimeByLayout is appendJSONTime through the layout, as it was written first.
func appendJSONTimeByLayout(b []byte, t time.Time) ([]byte, error) {
	if y := t.Year(); y >= 0 && y <= 9999 {
		if _, off := t.Zone(); off > -24*3600 && off < 24*3600 {
			if u := t.UTC(); u.Year() >= 0 && u.Year() <= 9999 {
				b = append(b, '"')
				b = u.AppendFormat(b, timespec.TimeLayout)
				return append(b, '"'), nil
			}
		}
	}
	j, err := t.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return append(b, j...), nil
}
