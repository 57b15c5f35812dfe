package replay

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/fieldwork/fieldwork/internal/dedup"
)

// Execution is how a run sends, beside what it sends and where (Spec): the rate and the
// batching of the producer and the journal. It is journaled with the spec, as the "execution"
// object of the run's selection, so that `replay resume` executes a run as it was started;
// the rest of what shapes an execution (the partitioner and partition rule, the edit and its
// headers, the stop rule, the group the records are for, the loop guard, --strict) is the
// spec's, journaled with it. A resume that is given one explicitly (--rate) uses that and
// journals it in place of the old, so that the next resume uses it too.
type Execution struct {
	// Rate caps records sent per second; 0 is no cap.
	Rate float64 `json:"rate"`
	// MaxBuffered, FlushRecords and FlushIntervalMS are ExecOptions' MaxBuffered,
	// FlushRecords and FlushInterval, as the run used them (the defaults filled in).
	MaxBuffered     int   `json:"max_buffered"`
	FlushRecords    int   `json:"flush_records"`
	FlushIntervalMS int64 `json:"flush_interval_ms"`
}

// MarshalJSON writes Rate as null when there is no cap (docs/design.md: an absent value is
// null, never a zero number).
func (e Execution) MarshalJSON() ([]byte, error) {
	type plain Execution
	var rate *float64
	if e.Rate > 0 {
		rate = &e.Rate
	}
	return json.Marshal(struct {
		Rate *float64 `json:"rate"`
		plain
	}{rate, plain(e)})
}

// Where an execution setting came from (ExecutionReport).
const (
	// FromFlag: given to this command (journaled with the run).
	FromFlag = "flag"
	// FromRun: journaled with the run being resumed.
	FromRun = "run"
	// FromDefault: neither given nor journaled: the default.
	FromDefault = "default"
	// FromUnknown: a resumed run journaled without its execution settings (by an earlier
	// version): how it was meant to execute is not known, and it resumes with the default.
	FromUnknown = "unknown"
)

// ExecutionReport says how a plan executes, or how a run did: each setting and where it came
// from (FromFlag, FromRun, FromDefault, FromUnknown).
type ExecutionReport struct {
	// Rate is the cap in records per second; null: no cap.
	Rate     *float64 `json:"rate"`
	RateFrom string   `json:"rate_from"`
	// MaxBuffered, FlushRecords and FlushIntervalMS are the batching (Execution); BatchFrom
	// where they came from.
	MaxBuffered     int    `json:"max_buffered"`
	FlushRecords    int    `json:"flush_records"`
	FlushIntervalMS int64  `json:"flush_interval_ms"`
	BatchFrom       string `json:"batch_from"`
}

// RateText is a cap on records per second as it is shown ("5000/s", a worker's share
// "333.33/s"): to the hundredth from 0.01 up, exactly below.
func RateText(perSecond float64) string {
	if perSecond >= 0.01 {
		perSecond = math.Round(perSecond*100) / 100
	}
	return strconv.FormatFloat(perSecond, 'f', -1, 64) + "/s"
}

// RateLabel is the rate as a plan says it: "5000/s (from the run)", "no cap (default)".
func (r ExecutionReport) RateLabel() string {
	rate := "no cap"
	if r.Rate != nil {
		rate = RateText(*r.Rate)
	}
	switch r.RateFrom {
	case FromRun:
		return rate + " (from the run)"
	case FromFlag:
		return rate + " (--rate)"
	case FromUnknown:
		return rate + " (the run was journaled without its rate: unknown, the default)"
	}
	return rate + " (default)"
}

// execution is what an execution uses: the rate of o, and for a resumed run without an
// explicit rate the one it was journaled with; the batching journaled with a resumed run, else
// the defaults.
func (o FlowOptions) execution(p *Plan) (Execution, ExecutionReport) {
	ex := Execution{Rate: o.Rate}
	rep := ExecutionReport{RateFrom: FromDefault, BatchFrom: FromDefault}
	if o.RateGiven || o.Rate > 0 {
		rep.RateFrom = FromFlag
	}
	if p.Resume != nil {
		if j := p.Resume.Execution; j == nil {
			if !o.RateGiven {
				rep.RateFrom = FromUnknown
			}
			rep.BatchFrom = FromUnknown
		} else {
			if !o.RateGiven {
				ex.Rate, rep.RateFrom = j.Rate, FromRun
			}
			ex.MaxBuffered, ex.FlushRecords, ex.FlushIntervalMS = j.MaxBuffered, j.FlushRecords, j.FlushIntervalMS
			rep.BatchFrom = FromRun
		}
	}
	ex = ex.withDefaults()
	if ex.Rate > 0 {
		rate := ex.Rate
		rep.Rate = &rate
	}
	rep.MaxBuffered, rep.FlushRecords, rep.FlushIntervalMS = ex.MaxBuffered, ex.FlushRecords, ex.FlushIntervalMS
	return ex, rep
}

// withDefaults fills in the default of every batching setting not set.
func (e Execution) withDefaults() Execution {
	if e.Rate < 0 {
		e.Rate = 0
	}
	if e.MaxBuffered <= 0 {
		e.MaxBuffered = DefaultMaxBuffered
	}
	if e.FlushRecords <= 0 {
		e.FlushRecords = DefaultFlushRecords
	}
	if e.FlushIntervalMS <= 0 {
		e.FlushIntervalMS = DefaultFlushInterval.Milliseconds()
	}
	return e
}

// executionOf is the Execution of opts, its defaults filled in.
func executionOf(opts ExecOptions) Execution {
	return Execution{Rate: opts.Rate, MaxBuffered: opts.MaxBuffered, FlushRecords: opts.FlushRecords, FlushIntervalMS: opts.FlushInterval.Milliseconds()}.withDefaults()
}

// options sets e in opts.
func (e Execution) options(opts ExecOptions) ExecOptions {
	opts.Rate, opts.MaxBuffered, opts.FlushRecords = e.Rate, e.MaxBuffered, e.FlushRecords
	opts.FlushInterval = time.Duration(e.FlushIntervalMS) * time.Millisecond
	return opts
}

// JournaledRateLabel is the rate a run's journaled selection holds, as `replay show` says it
// (the rate a resume keeps): "5000/s", "no cap", or unknown for a run journaled without its
// execution (by an earlier version).
func JournaledRateLabel(selection string) string {
	var j struct {
		Execution *Execution `json:"execution"`
	}
	switch err := json.Unmarshal([]byte(selection), &j); {
	case err != nil || j.Execution == nil:
		return "unknown (journaled without its execution settings: a resume sends with no cap unless given --rate)"
	case j.Execution.Rate > 0:
		return RateText(j.Execution.Rate)
	}
	return "no cap"
}

// JournaledPartitioners are the partitioners a run's journaled selection holds, chosen by its
// attempts for their targets (inferred, or the default), as `replay show` says them; none for a
// run that placed no keyed record by a choice of its own, or journaled by an earlier version.
func JournaledPartitioners(selection string) []PartitionerChoice {
	var j struct {
		Partitioners []PartitionerChoice `json:"partitioners"`
	}
	_ = json.Unmarshal([]byte(selection), &j) // a selection that is not a spec holds none
	return j.Partitioners
}

// journaled is a run's selection as the journal keeps it: the spec, how it executes, and the
// partitioners its attempts chose for their targets (docs/design.md §3.3).
type journaled struct {
	Spec
	Execution    *Execution          `json:"execution,omitempty"`
	Partitioners []PartitionerChoice `json:"partitioners,omitempty"`
}

// selection is the selection journaled for a run of p executed with opts: its spec, its
// execution and the partitioners chosen so far.
func (p *Plan) selection(opts ExecOptions) dedup.JSONText {
	return dedup.JSONText(marshalRun(&p.Spec, executionOf(opts), p.partitioners.choices()))
}

// marshalRun is the selection journaled for a run of spec executed as ex, whose attempts chose
// these partitioners (Plan.partitioners).
func marshalRun(spec *Spec, ex Execution, choices []PartitionerChoice) string {
	b, err := json.Marshal(journaled{Spec: *spec, Execution: &ex, Partitioners: choices})
	if err != nil {
		panic(fmt.Sprintf("replay: marshal spec: %v", err)) // plain data: cannot fail
	}
	return string(b)
}
