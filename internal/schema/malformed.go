package schema

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/envelope"
	"github.com/fieldwork/fieldwork/internal/kafka"
)

// ReadEvent is the decode step of every reader that judges records (inspect validate,
// aggregate and topic, processed check; docs/design.md §3.6): the envelope read through d, a
// registry-framed value decoded first. fatal is set when the registry itself failed (down,
// refusing the credentials) for a framed value: such a record is not malformed, only unread,
// and a reader that judges records stops with it (exit 4) rather than call it malformed. A
// framed value with no registry configured is a problem of the record (err, naming its
// schema id), not fatal: bytes that only look framed (a garbage record starting with a NUL)
// must not keep the rest of a topic from being judged.
func (d *Decoder) ReadEvent(ctx context.Context, rec *kgo.Record) (ev envelope.Event, err, fatal error) {
	return d.readEvent(ctx, rec, envelope.DecodeRecord)
}

// readEvent is ReadEvent with the envelope read by decode (Decoder.event).
func (d *Decoder) readEvent(ctx context.Context, rec *kgo.Record, decode func(*kgo.Record) (envelope.Event, error)) (ev envelope.Event, err, fatal error) {
	ev, _, err = d.event(ctx, rec, decode)
	if se, ok := errors.AsType[*Error](err); ok && se.Registry() {
		return ev, err, se.Kinded()
	}
	return ev, err, nil
}

// Malformed says why a record is not a recognisable event, in the one shape every command
// gives it (dlq show, inspect record, topic, aggregate and validate, processed check): the
// envelope's format, field and problem (JSON: problem), or the registry framing's for a payload that did not
// decode, the event id when the envelope had one, and the decoder's one-line message.
type Malformed struct {
	Format  string `json:"format,omitempty"`
	Field   string `json:"field,omitempty"`
	Reason  string `json:"problem"`
	EventID string `json:"event_id,omitempty"`
	// Message is the decoder's one-line error, position included.
	Message string `json:"message"`
}

// MalformedOf describes err, an error of Decoder.Event or envelope.Decode.
func MalformedOf(err error) Malformed {
	m := Malformed{Reason: err.Error(), Message: err.Error()}
	if me, ok := errors.AsType[*envelope.MalformedError](err); ok {
		m.Format, m.Field, m.Reason, m.EventID = string(me.Format), me.Field, me.Reason, me.EventID
	}
	if se, ok := errors.AsType[*Error](err); ok {
		m.Format, m.Field = string(se.Ref.Framing), "value"
		if se.Key {
			m.Field = "key"
		}
	}
	return m
}

// MalformedRecord is a record of a topic being judged that is not a recognisable event:
// where it is, and Malformed.
type MalformedRecord struct {
	Partition int32 `json:"partition"`
	Offset    int64 `json:"offset"`
	Malformed
}

// MalformedRecordOf describes rec's decode error err. A payload's error names the record's
// address in its message, as an envelope's names its position.
func MalformedRecordOf(rec *kgo.Record, err error) MalformedRecord {
	m := MalformedRecord{Partition: rec.Partition, Offset: rec.Offset, Malformed: MalformedOf(err)}
	if _, ok := errors.AsType[*Error](err); ok {
		m.Message = kafka.AddressOf(rec).String() + ": " + m.Message
	}
	return m
}
