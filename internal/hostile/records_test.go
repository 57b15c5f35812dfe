package hostile

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// hostileRecord is one record written to the source topic, and what the consumer must make of
// it: poison records are dead-lettered as malformed, the others processed (a marker each).
type hostileRecord struct {
	name   string
	key    []byte // nil: a null key
	value  []byte // nil: a tombstone
	header []kgo.RecordHeader
	poison bool
	// framed: the value starts as a registry-framed one (magic byte 0, a schema id), so a
	// consumer with no registry dead-letters it as unsupported, not malformed.
	framed bool
}

// event is a CloudEvents structured value; json.Marshal writes control characters in the
// strings as \u escapes, so the decoded attributes hold the raw characters.
func event(id, typ, subject string, data any) []byte {
	m := map[string]any{
		"specversion": "1.0", "id": id, "type": typ, "source": "/hostile",
		"aggregatetype": "task", "aggregateid": "task-" + id, "aggregateversion": 1, "data": data,
	}
	if subject != "" {
		m["subject"] = subject
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// The escape sequences a record may carry to a terminal: clear the screen and home the
// cursor, set the window title (OSC, ended by BEL, and by ST), colour (fieldwork's own
// bold red too), the 8-bit CSI (as a raw byte, not UTF-8) and as the C1 character U+009B, a
// carriage return that overwrites the line, a backspace and DEL, bidirectional overrides and
// isolates that show text in another order, and the bytes a Confluent-framed value starts
// with (NUL, the schema id) beside BEL and form feed; a header may hold NUL too (an event
// attribute may not: envelope finds it malformed, as PostgreSQL's text cannot hold it).
const (
	escClear = "\x1b[2J\x1b[H"
	escTitle = "\x1b]0;owned\x07"
	escRed   = "\x1b[31mred\x1b[0m"
	rawCSI   = "\x9b31m"
	c1CSI    = "\u009b31m"
	overtype = "ok\rFAIL\bX\x7f"
	nul      = "\x00"
	titleST  = "\x1b]2;owned too\x1b\\"
	ownRed   = "\x1b[1;91mfake error\x1b[0m"
	bidi     = "invoice-\u202egpj.exe\u202c \u2067rtl\u2069 \u200f"
	framed   = "\x00\x00\x00\x00\x2a\a\f"
)

// hostileRecords are the hostile records that are not large.
func hostileRecords() []hostileRecord {
	var thousand, thousandPoison []kgo.RecordHeader
	for i := range 1000 {
		thousand = append(thousand, kgo.RecordHeader{Key: fmt.Sprintf("h-%04d", i), Value: fmt.Appendf(nil, "value %d", i)})
		thousandPoison = append(thousandPoison, kgo.RecordHeader{Key: fmt.Sprintf("p-%04d", i), Value: []byte(escRed)})
	}
	return []hostileRecord{
		{name: "a plain event", key: []byte("task-1"), value: event("e-plain", "task.created", "", map[string]any{"title": "plain"})},
		{name: "a null key", value: event("e-null-key", "task.created", "", nil)},
		{name: "an empty value", key: []byte("task-2"), value: []byte{}, poison: true},
		{name: "a tombstone", key: []byte("task-3"), poison: true},
		// The value begins with a zero byte, but the four after it read as a negative Java int,
		// which no registry gives a schema: not framed, so malformed.
		{name: "binary key and value", key: []byte("\xff\xfe\x00\x9b"), value: []byte("\x00\xff\x9b31m\x1b[2J"), poison: true},
		{name: "an event with keys and headers that are not UTF-8", key: []byte("\xff\xfetask-4"),
			header: []kgo.RecordHeader{{Key: "\xff\xfe", Value: []byte("\xc3\x28")}, {Key: "x-binary", Value: []byte{0, 1, 2, 0xff}}},
			value:  event("e-not-utf8", "task.created", "", map[string]any{"title": "bytes"})},
		{name: "an event with escape sequences everywhere", key: []byte(escClear + "task-5" + rawCSI),
			header: []kgo.RecordHeader{
				{Key: escTitle, Value: []byte(escRed)},
				{Key: "x-overtype", Value: []byte(overtype + nul)},
				{Key: "x-c1" + c1CSI, Value: []byte(c1CSI + rawCSI)},
			},
			value: event("e-esc-"+escRed, "task."+escTitle, overtype, map[string]any{"title": escClear + c1CSI})},
		{name: "malformed, with escape sequences", key: []byte("task-6" + escTitle),
			header: []kgo.RecordHeader{{Key: "x-note" + escClear, Value: []byte(overtype + nul + rawCSI)}},
			value:  []byte(escClear + escRed + " is not json " + rawCSI + c1CSI), poison: true},
		{name: "malformed JSON quoting escape sequences", key: []byte("task-7"),
			value: []byte(`{"specversion":"1.0","id":"e-bad-` + escClear + `","aggregateversion":"` + escTitle + `"}`), poison: true},
		{name: "an event with 1,000 headers", key: []byte("task-8"), header: thousand,
			value: event("e-thousand", "task.created", "", nil)},
		{name: "malformed, with 1,000 headers", key: []byte("task-9"), header: thousandPoison,
			value: []byte(`{"specversion":"1.0"`), poison: true},
		{name: "an event with bidirectional overrides and OSC titles", key: []byte("task-11" + bidi),
			header: []kgo.RecordHeader{{Key: "x-bidi" + bidi, Value: []byte(bidi + titleST)}, {Key: "x-own-colour", Value: []byte(ownRed)}},
			value:  event("e-bidi", "task.created", bidi+titleST, map[string]any{"title": bidi + ownRed})},
		{name: "a Confluent-framed value (NUL, BEL, form feed) with C1 controls in key and headers",
			key:    []byte("task-12\u0085\u009d0;t\u009c"),
			header: []kgo.RecordHeader{{Key: "x-framed", Value: []byte(framed)}, {Key: "x-c1\u0090", Value: []byte("\u009b2J\u0085")}},
			value:  []byte(framed + `{"event_id":"e-framed","title":"` + escTitle[:len(escTitle)-1] + `"}`), poison: true, framed: true},
		{name: "malformed, not UTF-8, with every kind of control byte", key: []byte("\xc3\x28" + titleST + framed),
			header: []kgo.RecordHeader{{Key: "x-mixed\xff" + bidi, Value: []byte(ownRed + "\xe2\x80" + framed)}},
			value:  []byte(bidi + ownRed + "\xf0\x28\x8c\x28" + titleST + framed + c1CSI), poison: true},
		{name: "malformed JSON whose strings are not UTF-8 (a raw 8-bit CSI)", key: []byte("task-13"),
			value: []byte("{\"specversion\":\"1.0\",\"id\":\"e-utf8-\x9b31m\xff\",\"note\":\"\x9b2J\"}"), poison: true},
		{name: "an event after the others", key: []byte("task-10"), value: event("e-after", "task.created", "", nil)},
	}
}

// largeRecords are values of a mebibyte and more: two events and a poison record between
// them and an ordinary event, which the consumer must reach.
func largeRecords() []hostileRecord {
	return []hostileRecord{
		{name: "a 1 MiB event", key: []byte("big-1"), value: event("e-1mib", "task.created", "", map[string]any{"blob": strings.Repeat("a", 1<<20)})},
		{name: "a 1 MiB poison record", key: []byte("big-2"), value: []byte(strings.Repeat("x", 1<<20)), poison: true},
		{name: "a 2 MiB event", key: []byte("big-3"), value: event("e-2mib", "task.created", "", map[string]any{"blob": strings.Repeat("b", 2<<20)})},
		{name: "an ordinary event after them", key: []byte("big-4"), value: event("e-after-large", "task.created", "", nil)},
	}
}

// maxMessageBytes is the topics' max.message.bytes: room for the 2 MiB event and for a
// dead letter of the 1 MiB poison record with its headers.
const maxMessageBytes = 8 << 20
