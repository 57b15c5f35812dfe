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
// its Status, or null when it was not looked up; and last_replay: the latest journaled replay of
// the dead letter (StatusInfo.Replay, whatever the status), null when none is known.
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
	out = append(out, `,"last_replay":`...)
	if e.Status.Replay == nil {
		out = append(out, "null"...)
	} else {
		b, err := json.Marshal(e.Status.Replay)
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
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
	// Cut are the topics, in scan order, that had more matching dead letters than their
	// share of the limit (see List).
	Cut []string
}

// List runs s and hands emit every dead letter that passes the filter and the status filter,
// in scan order, until the limit. Statuses are looked up in batches while the scan streams:
// emit is called late by at most a batch.
//
// The limit is shared fairly among the scan's topics (docs/design.md §4): when the first dead
// letter of a topic arrives, that topic's share is what is left of the limit divided by the
// topics not yet listed (itself included, rounded up), so what a topic does not use passes on
// to the topics after it. The dead letters of a topic past its share are held back (at most
// the limit of them, in scan order) and, when the later topics leave room, listed after them
// at the end, so that a limit at least as large as everything lists everything. Cut names
// the topics some of whose dead letters are left out, More says any are. The scan stops at
// the dead letter after the last topic's share. Over one topic this is the plain limit. The
// scan must read in order (ScanOptions.InOrder), one topic after the other.
func List(ctx context.Context, s *Scan, o ListOptions, emit func(Entry) error) (ListResult, error) {
	var res ListResult
	topics := scanTopics(s)
	index := make(map[string]int, len(topics))
	for i, t := range topics {
		index[t] = i
	}
	var held []Entry // past their topic's share, in scan order
	current, share, inTopic := "", 0, 0
	b := NewStatusBatcher(o.Lookup, o.StatusBatch, func(d DeadLetter, info StatusInfo) error {
		if len(o.Statuses) > 0 && !slices.Contains(o.Statuses, info.Status) {
			return nil
		}
		if o.Limit > 0 {
			if d.Topic != current {
				// Rounded up, so that a limit smaller than the topics still reaches the first
				// ones; never more than is left, so that the shares add up to the limit.
				current, inTopic = d.Topic, 0
				left, rest := max(len(topics)-index[d.Topic], 1), o.Limit-res.Listed
				share = (rest + left - 1) / left
			}
			if inTopic >= share {
				if index[d.Topic] == len(topics)-1 || len(held) >= o.Limit {
					res.More = true
					addCut(&res, d.Topic)
					return ErrStop
				}
				held = append(held, Entry{DeadLetter: d, Status: info})
				return nil
			}
			inTopic++
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
	if err != nil {
		return res, err
	}
	// The room the later topics left, for what the earlier ones held back.
	room := min(max(o.Limit-res.Listed, 0), len(held))
	for _, e := range held[:room] {
		res.Listed++
		if err := emit(e); err != nil {
			return res, err
		}
	}
	if rest := held[room:]; len(rest) > 0 {
		res.More = true
		cut := res.Cut
		res.Cut = nil
		for _, e := range rest {
			addCut(&res, e.Topic)
		}
		for _, t := range cut {
			addCut(&res, t)
		}
	}
	return res, nil
}

// addCut adds topic to res.Cut unless it is there.
func addCut(res *ListResult, topic string) {
	if !slices.Contains(res.Cut, topic) {
		res.Cut = append(res.Cut, topic)
	}
}

// scanTopics are the distinct topics of s's ranges, in scan order.
func scanTopics(s *Scan) []string {
	var topics []string
	for _, r := range s.ranges {
		if len(topics) == 0 || topics[len(topics)-1] != r.Topic {
			topics = append(topics, r.Topic)
		}
	}
	return topics
}
