package timespec

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/fieldwork/fieldwork/internal/fwerr"
)

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// TestParse is the one table of what the time and duration flags accept and refuse. A case
// with want "" must fail with a usage error whose message contains errPart.
func TestParse(t *testing.T) {
	cases := []struct {
		kind    string // "duration" or "time"
		in      string
		want    string // a duration as Format writes it, or a time in RFC 3339
		errPart string
	}{
		// Durations: Go's units, days, weeks, in combination.
		{kind: "duration", in: "90m", want: "1h30m"},
		{kind: "duration", in: "36h", want: "1d12h"},
		{kind: "duration", in: "7d", want: "7d"},
		{kind: "duration", in: "2w", want: "14d"},
		{kind: "duration", in: "1d12h", want: "1d12h"},
		{kind: "duration", in: "1w2d", want: "9d"},
		{kind: "duration", in: "1.5h", want: "1h30m"},
		{kind: "duration", in: "0.5d", want: "12h"},
		{kind: "duration", in: "1h30m15s", want: "1h30m15s"},
		{kind: "duration", in: "250ms", want: "250ms"},
		{kind: "duration", in: "1m0.5s", want: "1m500ms"},
		{kind: "duration", in: "3µs", want: "3µs"},
		{kind: "duration", in: "3us", want: "3µs"},
		{kind: "duration", in: " 30d ", want: "30d"},
		{kind: "duration", in: "+2h", want: "2h"},
		{kind: "duration", in: "0", want: "0s"},
		{kind: "duration", in: "0d", want: "0s"},
		{kind: "duration", in: "106751d23h47m16.854775807s", want: "106751d23h47m16.854775807s"},
		{kind: "duration", in: "", errPart: "empty duration"},
		{kind: "duration", in: "   ", errPart: "empty duration"},
		{kind: "duration", in: "-2h", errPart: "negative duration"},
		{kind: "duration", in: "-0", errPart: "negative duration"},
		{kind: "duration", in: "90", errPart: "missing unit"},
		{kind: "duration", in: "3y", errPart: `unknown unit "y"`},
		{kind: "duration", in: "2days", errPart: `unknown unit "days"`},
		{kind: "duration", in: "1h 30m", errPart: "no spaces"},
		{kind: "duration", in: "h", errPart: "expected a number"},
		{kind: "duration", in: "abc", errPart: "expected a number"},
		{kind: "duration", in: ".h", errPart: "not a number"},
		{kind: "duration", in: "+", errPart: "invalid duration"},
		{kind: "duration", in: "106752d", errPart: "too long"},
		{kind: "duration", in: "15251w", errPart: "too long"},
		{kind: "duration", in: "99999999999999999999h", errPart: "too long"},
		{kind: "duration", in: "106751d23h47m17s", errPart: "too long"},

		// Times: RFC 3339, a date at midnight UTC, a duration ago.
		{kind: "time", in: "2026-12-01T15:04:05Z", want: "2026-12-01T15:04:05Z"},
		{kind: "time", in: "2026-12-01T15:04:05.25+02:00", want: "2026-12-01T15:04:05.25+02:00"},
		{kind: "time", in: "2026-12-01", want: "2026-12-01T00:00:00Z"},
		{kind: "time", in: "2h", want: "2026-11-30T10:00:00Z"},
		{kind: "time", in: "7d", want: "2026-11-23T12:00:00Z"},
		{kind: "time", in: "1w2d", want: "2026-11-21T12:00:00Z"},
		{kind: "time", in: "90m", want: "2026-11-30T10:30:00Z"},
		{kind: "time", in: "", errPart: "empty time"},
		{kind: "time", in: "2026-02-30", errPart: "not a date: day out of range"},
		{kind: "time", in: "2026-13-01", errPart: "not a date: month out of range"},
		{kind: "time", in: "2026-12-01T15:04:05", errPart: "missing the zone"},
		{kind: "time", in: "2026-12-01 15:04:05Z", errPart: "is not a time: not RFC 3339"},
		{kind: "time", in: "-2h", errPart: "never negative"},
		{kind: "time", in: "0s", errPart: "more than 0"},
		{kind: "time", in: "3y", errPart: `unknown unit "y"`},
		{kind: "time", in: "yesterday", errPart: "is not a time: want an RFC 3339 time"},
		{kind: "time", in: "1700000000", errPart: "missing unit"},
		// Epoch milliseconds, a local time with its zone's name.
		{kind: "time", in: "1764601445000", want: "2025-12-01T15:04:05Z"},
		{kind: "time", in: "1764601445123", want: "2025-12-01T15:04:05.123Z"},
		{kind: "time", in: "2026-12-01 15:04 Europe/Paris", want: "2026-12-01T15:04:00+01:00"},
		{kind: "time", in: "2026-07-01T15:04:05 Europe/Paris", want: "2026-07-01T15:04:05+02:00"},
		{kind: "time", in: "2026-12-01 15:04:05 UTC", want: "2026-12-01T15:04:05Z"},
		{kind: "time", in: "2026-12-01 15:04 Mars/Olympus", errPart: `is not a time: unknown time zone "Mars/Olympus"`},
		{kind: "time", in: "2026-12-01 25:04 Europe/Paris", errPart: "is not a time: \"2026-12-01 25:04\" is not a local time"},
		{kind: "time", in: "99999999999999999999", errPart: "is not a time: too many digits"},
		// Before the epoch: to the broker, -1 ms is the end of the log and -2 ms its start.
		{kind: "time", in: "1969-12-31T23:59:59.999Z", errPart: "is not a time: 1969-12-31T23:59:59.999Z is before the Unix epoch"},
		{kind: "time", in: "1969-12-31 23:30 UTC", errPart: "is before the Unix epoch"},
		{kind: "time", in: "3000w", errPart: "is before the Unix epoch"},
		{kind: "time", in: "1970-01-01", want: "1970-01-01T00:00:00Z"},
	}
	for _, c := range cases {
		t.Run(c.kind+"/"+c.in, func(t *testing.T) {
			var got string
			var err error
			if c.kind == "duration" {
				var d time.Duration
				d, err = ParseDuration(c.in)
				got = Format(d)
			} else {
				var tm time.Time
				tm, err = ParseTime(c.in, now)
				got = tm.Format(time.RFC3339Nano)
			}
			if c.want != "" {
				if err != nil {
					t.Fatalf("%q: %v", c.in, err)
				}
				if got != c.want {
					t.Fatalf("%q read as %s, want %s", c.in, got, c.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("%q read as %s, want an error containing %q", c.in, got, c.errPart)
			}
			if fwerr.KindOf(err) != fwerr.KindUsage {
				t.Errorf("%q: error kind %v, want usage: %v", c.in, fwerr.KindOf(err), err)
			}
			if !strings.Contains(err.Error(), c.errPart) {
				t.Errorf("%q: error %q does not say %q", c.in, err, c.errPart)
			}
		})
	}
}

func TestFormat(t *testing.T) {
	cases := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{500 * time.Millisecond, "500ms"},
		{time.Second, "1s"},
		{90 * time.Second, "1m30s"},
		{90 * time.Minute, "1h30m"},
		{2 * time.Hour, "2h"},
		{time.Hour + 5*time.Second, "1h5s"},
		{24 * time.Hour, "1d"},
		{36 * time.Hour, "1d12h"},
		{168 * time.Hour, "7d"},
		{720 * time.Hour, "30d"},
		{604800000 * time.Millisecond, "7d"},
		{Day + 1500*time.Millisecond, "1d1.5s"},
		{-36 * time.Hour, "-1d12h"},
		{math.MaxInt64, "106751d23h47m16.854775807s"},
	}
	for _, c := range cases {
		if got := Format(c.d); got != c.want {
			t.Errorf("Format(%v) = %s, want %s", c.d, got, c.want)
		}
		if c.d >= 0 {
			if back, err := ParseDuration(Format(c.d)); err != nil || back != c.d {
				t.Errorf("ParseDuration(Format(%v)) = %v, %v", c.d, back, err)
			}
		}
	}
}

// TestFlags checks the flag values the way the command line uses them: help shows the
// default as Format writes it, Set errors are usage errors, a time counts back from the clock.
func TestFlags(t *testing.T) {
	var (
		window, idle, older time.Duration
		since, until        time.Time
	)
	clock := now
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.Var(NewDurationValue(&window, 24*time.Hour), "window", "rate window")
	fs.Var(NewDurationValue(&idle, 0).AllowZero(), "idle", "stop when idle (0: never)")
	fs.Var(NewDurationValue(&older, 0), "older-than", "age")
	fs.Var(NewTimeValue(&since, func() time.Time { return clock }), "since", "from")
	fs.Var(NewTimeValue(&until, nil), "until", "before")

	usage := fs.FlagUsages()
	for _, want := range []string{"--window duration       rate window (default 1d)", "--since time", "--older-than duration   age\n"} {
		if !strings.Contains(usage, want) {
			t.Errorf("help does not show %q:\n%s", want, usage)
		}
	}
	if strings.Contains(usage, "24h0m0s") {
		t.Errorf("help shows Go's spelling of a day:\n%s", usage)
	}

	if err := fs.Parse([]string{"--window", "7d", "--idle", "0", "--since", "2d", "--until", "2026-12-01"}); err != nil {
		t.Fatal(err)
	}
	if window != 7*Day || idle != 0 || !since.Equal(now.Add(-2*Day)) || !until.Equal(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("window %v idle %v since %v until %v", window, idle, since, until)
	}
	if got := fs.Lookup("window").Value.String(); got != "7d" {
		t.Errorf("--window shows %q, want 7d", got)
	}
	if got := fs.Lookup("since").Value.String(); got != "2d" {
		t.Errorf("--since shows %q, want the text given", got)
	}

	for _, bad := range []struct{ flag, value, errPart string }{
		{"window", "0", "must be more than 0"},
		{"window", "-1h", "negative duration"},
		{"since", "soon", "is not a time"},
	} {
		err := fs.Lookup(bad.flag).Value.Set(bad.value)
		if err == nil || fwerr.KindOf(err) != fwerr.KindUsage || !strings.Contains(err.Error(), bad.errPart) {
			t.Errorf("--%s %s: %v, want a usage error saying %q", bad.flag, bad.value, err, bad.errPart)
		}
	}
	if window != 7*Day {
		t.Errorf("a refused value changed --window to %v", window)
	}
}
