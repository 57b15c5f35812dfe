package dlq

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
)

// Entry is a dead letter as `dlq list` shows it: the normalised view and, when a store was
// given, its status.
type Entry struct {
	DeadLetter
	Status StatusInfo
}

// MarshalJSON writes the DeadLetter's fields (see DeadLetter.MarshalJSON) followed by status:
// its Status, or null when it was not looked up.
func (e Entry) MarshalJSON() ([]byte, error) { return e.AppendJSON(nil) }

// AppendJSON appends what MarshalJSON writes to dst (see DeadLetter.AppendJSON).
func (e Entry) AppendJSON(dst []byte) ([]byte, error) {
	out, err := e.DeadLetter.appendJSON(dst)
	if err != nil {
		return nil, err
	}
	out = append(out[:len(out)-1], `,"status":`...)
	if e.Status.Status == "" {
		out = append(out, "null"...)
	} else {
		out = appendJSONString(out, string(e.Status.Status))
	}
	return append(out, '}'), nil
}

// jsonField is one field appended to an object by appendJSONFields.
type jsonField struct {
	name  string
	value any
}

// appendJSONFields appends to dst the JSON object of d (DeadLetter.AppendJSON) with fields
// added at its end, in order.
func appendJSONFields(dst []byte, d DeadLetter, fields ...jsonField) ([]byte, error) {
	start := len(dst)
	out, err := d.AppendJSON(dst)
	if err != nil {
		return nil, err
	}
	if len(out)-start < 2 || out[len(out)-1] != '}' {
		return nil, errors.New("dlq: a dead letter's JSON is not an object")
	}
	out = out[:len(out)-1]
	for _, f := range fields {
		if len(out)-start > 1 {
			out = append(out, ',')
		}
		name, _ := json.Marshal(f.name)
		v, err := json.Marshal(f.value)
		if err != nil {
			return nil, err
		}
		out = append(out, name...)
		out = append(out, ':')
		out = append(out, v...)
	}
	return append(out, '}'), nil
}

// ListOptions select the dead letters List hands on.
type ListOptions struct {
	Filter Filter
	// Lookup tells statuses; without a store no status is looked up.
	Lookup StatusLookup
	// Statuses keeps only dead letters with one of these statuses (a store is needed).
	Statuses []Status
	// Limit stops the listing after this many dead letters; 0 is no limit.
	Limit int
	// StatusBatch is how many dead letters are looked up together (DefaultStatusBatch).
	StatusBatch int
}

// ListResult says what List did.
type ListResult struct {
	ScanResult
	// Listed is the number of dead letters handed to emit.
	Listed int
	// More is true when the limit was reached and at least one more dead letter matched.
	More bool
}

// List runs s and hands emit every dead letter that passes the filter and the status filter,
// in scan order, until the limit. It reads until the dead letter after the limit is found, so
// that More is certain, then stops. Statuses are looked up in batches while the scan
// streams: emit is called late by at most a batch.
func List(ctx context.Context, s *Scan, o ListOptions, emit func(Entry) error) (ListResult, error) {
	var res ListResult
	b := NewStatusBatcher(o.Lookup, o.StatusBatch, func(d DeadLetter, info StatusInfo) error {
		if len(o.Statuses) > 0 && !slices.Contains(o.Statuses, info.Status) {
			return nil
		}
		if o.Limit > 0 && res.Listed >= o.Limit {
			res.More = true
			return ErrStop
		}
		res.Listed++
		return emit(Entry{DeadLetter: d, Status: info})
	})
	sr, err := s.Run(ctx, o.Filter, func(d DeadLetter) error { return b.Add(ctx, d) })
	res.ScanResult = sr
	if err == nil && !sr.Stopped {
		err = b.Flush(ctx)
		if errors.Is(err, ErrStop) {
			res.Stopped, err = true, nil
		}
	}
	return res, err
}
