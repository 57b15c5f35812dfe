package timespec

import (
	"time"

	"github.com/fieldwork/fieldwork/internal/fwerr"
)

// DurationValue is a command-line flag value (String, Set and Type: pflag's Value) holding a
// duration read by ParseDuration into the time.Duration it points at. Help shows its default
// through Format: `--window duration   … (default 1d)`. Zero is refused unless AllowZero was
// called, since most duration flags (a window, an age) mean nothing at zero.
//
//	fl.Var(timespec.NewDurationValue(&opts.Window, 24*time.Hour), "window", "rate window ending now: 90m, 1d, 2w")
type DurationValue struct {
	p         *time.Duration
	allowZero bool
}

// NewDurationValue sets *p to def and returns the flag value that Set updates.
func NewDurationValue(p *time.Duration, def time.Duration) *DurationValue {
	*p = def
	return &DurationValue{p: p}
}

// AllowZero makes Set accept 0 (for a flag where 0 means "off") and returns v.
func (v *DurationValue) AllowZero() *DurationValue { v.allowZero = true; return v }

// Set parses s with ParseDuration.
func (v *DurationValue) Set(s string) error {
	d, err := ParseDuration(s)
	if err != nil {
		return err
	}
	if d == 0 && !v.allowZero {
		return fwerr.Usagef("%q: must be more than 0 (%s)", s, durationHint)
	}
	*v.p = d
	return nil
}

// String is the current value as Format writes it, except zero, which is "0": help leaves
// out a default of "0", and a duration flag defaulting to zero is either required or off
// until set (its usage says which), never "0s" in effect.
func (v *DurationValue) String() string {
	if v == nil || v.p == nil || *v.p == 0 {
		return "0"
	}
	return Format(*v.p)
}

// Type names the value in help: "duration".
func (v *DurationValue) Type() string { return "duration" }

// Duration is the current value.
func (v *DurationValue) Duration() time.Duration { return *v.p }

// TimeValue is a command-line flag value (pflag's Value) holding a time read by ParseTime
// into the time.Time it points at; a duration counts back from now() at the moment the flag
// is set. Unset, the time stays zero: no bound. Help shows no default.
//
//	fl.Var(timespec.NewTimeValue(&opts.Since, opts.now), "since", "from this time: RFC 3339, a date (midnight UTC) or a duration ago (2h, 7d)")
type TimeValue struct {
	p    *time.Time
	now  func() time.Time
	text string
}

// NewTimeValue returns the flag value that Set updates. now anchors durations (time.Now when
// nil); pass a function that reads the options' clock at call time, so a test may swap it.
func NewTimeValue(p *time.Time, now func() time.Time) *TimeValue {
	if now == nil {
		now = time.Now
	}
	return &TimeValue{p: p, now: now}
}

// Set parses s with ParseTime.
func (v *TimeValue) Set(s string) error {
	t, err := ParseTime(s, v.now())
	if err != nil {
		return err
	}
	*v.p, v.text = t, s
	return nil
}

// String is the text the flag was set to ("" when unset).
func (v *TimeValue) String() string {
	if v == nil {
		return ""
	}
	return v.text
}

// Type names the value in help: "time".
func (v *TimeValue) Type() string { return "time" }

// Time is the current value (zero when unset).
func (v *TimeValue) Time() time.Time { return *v.p }
