package hostile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestHostileRecords runs the hostile records that are not large through every command. The
// replay's --reason holds an escape sequence too: it is shown, journaled and sent on.
func TestHostileRecords(t *testing.T) { exercise(t, hostileRecords(), "hostile records "+escRed) }

// TestLargeRecords runs values of a mebibyte and more through every command: the poison one
// must be dead-lettered like any other, and the partition move on past it.
func TestLargeRecords(t *testing.T) { exercise(t, largeRecords(), "large records") }

// scenario is one test's topics, store and records.
type scenario struct {
	env
	recs              []hostileRecord
	reason            string // the replay's --reason
	topic, dlqTopic   string // the source and the dead-letter topic of the table-format consumer
	jsonDLQ           string // the dead-letter topic of the JSON-format consumer
	schema            string
	groupTable        string
	groupJSON         string
	poison, processed []int64 // source offsets
}

// exercise writes recs to a new topic and runs consume (twice: table and JSON output, as two
// groups), dlq list and show, inspect record, validate and topic, and replay (a plan, then an
// execution) on them, checking each command's exit code and output and that no record is
// lost.
func exercise(t *testing.T, recs []hostileRecord, reason string) {
	s := &scenario{recs: recs, reason: reason}
	s.brokers, s.dsn, s.home = testenv.Brokers(t), testenv.DSN(t), t.TempDir()
	s.topic = testenv.Name(t, "fwh")
	s.dlqTopic, s.jsonDLQ = s.topic+".dlq", s.topic+"-json.dlq"
	s.groupTable, s.groupJSON = s.topic+"-table", s.topic+"-json"
	s.schema = schema(t)
	for i, r := range recs {
		if r.poison {
			s.poison = append(s.poison, int64(i))
		} else {
			s.processed = append(s.processed, int64(i))
		}
	}
	createTopics(t, s.topic, s.dlqTopic, s.jsonDLQ)
	produce(t, s.topic, recs)

	// Every later step reads what the consumers wrote: without it they only fail again.
	if !t.Run("consume", s.consume) {
		t.FailNow()
	}
	// The rest read, except the replay, last, which writes to the source topic. A step that
	// fails does not keep the others from running.
	for _, step := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"dlq list", s.dlqList},
		{"dlq show", s.dlqShow},
		{"inspect record", s.inspectRecord},
		{"inspect validate", s.inspectValidate},
		{"inspect topic", s.inspectTopic},
		{"replay", s.replay},
	} {
		t.Run(step.name, step.run)
	}
}

// consume runs the reference consumer as a terminal user would (table, text logs) and as a
// script would (JSON, JSON logs), each as a group of its own with a dead-letter topic of its
// own. Both must exit 0 with every event marked and every poison record dead-lettered.
func (s *scenario) consume(t *testing.T) {
	common := []string{"consume", "--topic", s.topic, "--handler", "audit", "--migrate", "--schema", s.schema,
		"--stop-when-idle", "3s", "--metrics-addr", ""}
	r := s.expect(t, 0, append(common, "--group", s.groupTable, "-o", "table", "--log-format", "text")...)
	checkTerminal(t, r)
	s.checkConsumed(t, s.groupTable, s.dlqTopic)

	r = s.expect(t, 0, append(common, "--group", s.groupJSON, "--dlq-topic", s.jsonDLQ, "-o", "json", "--log-format", "json")...)
	checkJSON(t, r)
	checkJSONLines(t, "stderr", r.stderr)
	checkTerminal(t, r) // JSON log lines escape every control byte too
	s.checkConsumed(t, s.groupJSON, s.jsonDLQ)
}

// checkConsumed asserts that nothing was lost: each event has a marker, each poison record
// exactly one dead letter, malformed (unsupported when it looks registry-framed), with an
// error, its key, value and headers kept.
func (s *scenario) checkConsumed(t *testing.T, group, dlqTopic string) {
	t.Helper()
	markers := markerOffsets(t, s.schema, group)
	for _, off := range s.processed {
		if _, ok := markers[off]; !ok {
			t.Errorf("%s: %s (offset %d) has no marker", group, s.recs[off].name, off)
		}
	}
	for _, off := range s.poison {
		if id, ok := markers[off]; ok {
			t.Errorf("%s: poison %s (offset %d) has a marker for %q", group, s.recs[off].name, off, id)
		}
	}
	if len(markers) != len(s.processed) {
		t.Errorf("%s: %d markers, want %d: %s", group, len(markers), len(s.processed), clip(fmt.Append(nil, markers)))
	}
	letters := readTopic(t, dlqTopic, 0)
	seen := map[int64]bool{}
	for _, l := range letters {
		d := dlq.Parse(l)
		off := int64(-1)
		if d.OriginalOffset != nil {
			off = *d.OriginalOffset
		}
		if d.OriginalTopic != s.topic || off < 0 || off >= int64(len(s.recs)) || seen[off] {
			t.Errorf("%s: dead letter %s/%d/%d names %q offset %d", group, l.Topic, l.Partition, l.Offset, d.OriginalTopic, off)
			continue
		}
		seen[off] = true
		h := s.recs[off]
		if !h.poison {
			t.Errorf("%s: %s (offset %d) was dead-lettered: %q", group, h.name, off, d.ErrorMessage)
		}
		want := dlq.ReasonMalformed
		if h.framed {
			want = dlq.ReasonUnsupported // no registry to read it with (design §3.6)
		}
		if d.Reason != want || strings.TrimSpace(d.ErrorMessage) == "" {
			t.Errorf("%s: dead letter of %s: reason %q, error %q; want %s with an error", group, h.name, d.Reason, d.ErrorMessage, want)
		}
		if !bytes.Equal(l.Key, h.key) || (l.Key == nil) != (h.key == nil) || !bytes.Equal(l.Value, h.value) || (l.Value == nil) != (h.value == nil) {
			t.Errorf("%s: dead letter of %s changed its key or value: key %s value %s", group, h.name, clip(l.Key), clip(l.Value))
		}
		if !sameHeaders(dlq.StripDeadLetterHeaders(l.Headers), h.header) {
			t.Errorf("%s: dead letter of %s does not keep its %d headers byte for byte", group, h.name, len(h.header))
		}
	}
	for _, off := range s.poison {
		if !seen[off] {
			t.Errorf("%s: poison %s (offset %d) was not dead-lettered", group, s.recs[off].name, off)
		}
	}
}

// dlqList lists the dead letters in both formats; the JSON names each one's original offset.
func (s *scenario) dlqList(t *testing.T) {
	args := []string{"dlq", "list", "--topic", s.dlqTopic, "--schema", s.schema, "--limit", "0"}
	checkTerminal(t, s.expect(t, 0, append(args, "-o", "table")...))
	checkColourTerminal(t, s.onTerminal(t, 0, args...))
	r := s.expect(t, 0, append(args, "-o", "json")...)
	checkJSON(t, r)
	var list []struct {
		Offset         int64  `json:"offset"`
		OriginalTopic  string `json:"original_topic"`
		OriginalOffset *int64 `json:"original_offset"`
		Reason         string `json:"reason"`
		Status         string `json:"status"`
		jsonBytes
	}
	if err := json.Unmarshal(r.stdout, &list); err != nil {
		t.Fatalf("dlq list -o json: %v\n%s", err, r)
	}
	letters := map[int64]*kgo.Record{}
	for _, l := range readTopic(t, s.dlqTopic, 0) {
		letters[l.Offset] = l
	}
	var got []int64
	for _, d := range list {
		if l := letters[d.Offset]; l != nil {
			checkBytesJSON(t, r, fmt.Sprintf("dead letter %d: key", d.Offset), d.Key, d.KeyBase64, l.Key)
		}
		if d.OriginalTopic != s.topic || d.OriginalOffset == nil || d.Reason != dlq.ReasonMalformed && d.Reason != dlq.ReasonUnsupported {
			t.Errorf("dlq list: original %q offset %v, reason %q", d.OriginalTopic, d.OriginalOffset, d.Reason)
			continue
		}
		got = append(got, *d.OriginalOffset)
	}
	if slices.Sort(got); !slices.Equal(got, s.poison) {
		t.Errorf("dlq list: original offsets %v, want %v", got, s.poison)
	}
}

// dlqShow shows every dead letter in both formats.
func (s *scenario) dlqShow(t *testing.T) {
	for _, l := range readTopic(t, s.dlqTopic, 0) {
		addr := fmt.Sprintf("%s/%d/%d", l.Topic, l.Partition, l.Offset)
		args := []string{"dlq", "show", addr, "--schema", s.schema}
		checkTerminal(t, s.expect(t, 0, append(args, "-o", "table")...))
		checkColourTerminal(t, s.onTerminal(t, 0, args...))
		r := s.expect(t, 0, append(args, "-o", "json")...)
		checkJSON(t, r)
		checkRecordJSON(t, r, l.Key, l.Value, l.Headers)
	}
}

// inspectRecord shows every source record in both formats: an event decoded, or exactly
// why it is malformed.
func (s *scenario) inspectRecord(t *testing.T) {
	for i, h := range s.recs {
		addr := fmt.Sprintf("%s/0/%d", s.topic, i)
		r := s.expect(t, 0, "inspect", "record", addr, "-o", "table")
		checkTerminal(t, r)
		if h.poison != bytes.Contains(r.stdout, []byte("Malformed")) {
			t.Errorf("inspect record %s (%s): poison %v, but the output says\n%s", addr, h.name, h.poison, clip(r.stdout))
		}
		checkColourTerminal(t, s.onTerminal(t, 0, "inspect", "record", addr))
		r = s.expect(t, 0, "inspect", "record", addr, "-o", "json")
		checkJSON(t, r)
		checkRecordJSON(t, r, h.key, h.value, h.header)
	}
}

// inspectValidate lints the source topic: the poison records are problems (exit 3).
func (s *scenario) inspectValidate(t *testing.T) {
	code := 0
	if len(s.poison) > 0 {
		code = 3
	}
	checkTerminal(t, s.expect(t, code, "inspect", "validate", s.topic, "-o", "table"))
	checkColourTerminal(t, s.onTerminal(t, code, "inspect", "validate", s.topic))
	checkJSON(t, s.expect(t, code, "inspect", "validate", s.topic, "-o", "json"))
}

// inspectTopic describes the source and the dead-letter topic.
func (s *scenario) inspectTopic(t *testing.T) {
	for _, topic := range []string{s.topic, s.dlqTopic} {
		checkTerminal(t, s.expect(t, 0, "inspect", "topic", topic, "-o", "table"))
		checkJSON(t, s.expect(t, 0, "inspect", "topic", topic, "-o", "json"))
	}
}

// replay plans the replay of the dead-letter topic, then executes it, and checks that the
// source topic received exactly what the plan said it would send: each dead letter's key,
// value and original headers, byte for byte, with the provenance headers.
func (s *scenario) replay(t *testing.T) {
	args := []string{"replay", "--topic", s.dlqTopic, "--schema", s.schema}
	checkTerminal(t, s.expect(t, 0, append(args, "-o", "table")...))
	checkColourTerminal(t, s.onTerminal(t, 0, args...))
	r := s.expect(t, 0, append(args, "-o", "json")...)
	checkJSON(t, r)
	var plan struct {
		Counts struct {
			Selected int64 `json:"selected"`
			ToSend   int64 `json:"to_send"`
		} `json:"counts"`
	}
	if err := json.Unmarshal(r.stdout, &plan); err != nil {
		t.Fatalf("replay -o json: %v\n%s", err, r)
	}
	if plan.Counts.ToSend != int64(len(s.poison)) {
		t.Fatalf("replay plan: %d to send, want %d\n%s", plan.Counts.ToSend, len(s.poison), r)
	}

	r = s.expect(t, 0, append(args, "--execute", "--yes", "--reason", s.reason, "-o", "table")...)
	checkTerminal(t, r)
	sent := readTopic(t, s.topic, int64(len(s.recs)))
	if int64(len(sent)) != plan.Counts.ToSend {
		t.Fatalf("replay sent %d records, planned %d\n%s", len(sent), plan.Counts.ToSend, r)
	}
	letters := readTopic(t, s.dlqTopic, 0)
	for _, rec := range sent {
		source, _ := header(rec.Headers, dlq.ReplayHeaderSource)
		var from *kgo.Record
		for _, l := range letters {
			if source == fmt.Sprintf("%s/%d/%d", l.Topic, l.Partition, l.Offset) {
				from = l
			}
		}
		if from == nil {
			t.Errorf("replayed record at %d names source %q, not a dead letter", rec.Offset, source)
			continue
		}
		kept := dlq.StripDeadLetterHeaders(from.Headers)
		var own []kgo.RecordHeader
		for _, h := range rec.Headers {
			if !strings.HasPrefix(h.Key, dlq.ReplayHeaderPrefix) {
				own = append(own, h)
			}
		}
		if !bytes.Equal(rec.Key, from.Key) || (rec.Key == nil) != (from.Key == nil) ||
			!bytes.Equal(rec.Value, from.Value) || (rec.Value == nil) != (from.Value == nil) || !sameHeaders(own, kept) {
			t.Errorf("replayed record at %d is not the dead letter %q byte for byte", rec.Offset, source)
		}
		if count, _ := header(rec.Headers, dlq.ReplayHeaderCount); count != "1" {
			t.Errorf("replayed record at %d: %s %q", rec.Offset, dlq.ReplayHeaderCount, count)
		}
	}
}

// checkJSON fails the test unless a -o json command printed one valid JSON value that a
// terminal may show as it is: JSON escapes every control character, C1 and bidirectional ones
// too.
func checkJSON(t *testing.T, r result) {
	t.Helper()
	if !json.Valid(r.stdout) {
		t.Errorf("fieldwork %s: stdout is not valid JSON: %s", cmdline(r.args), clip(r.stdout))
	}
	if why := terminalUnsafe(r.stdout); why != "" {
		t.Errorf("fieldwork %s: JSON stdout: %s", cmdline(r.args), why)
	}
}

// jsonBytes is record bytes in JSON, as every command gives them: text, and the exact bytes
// in a *_base64 field when they are not printable text.
type jsonBytes struct {
	Key         *string `json:"key"`
	KeyBase64   []byte  `json:"key_base64"`
	Value       *string `json:"value"`
	ValueBase64 []byte  `json:"value_base64"`
}

// checkRecordJSON fails the test unless the JSON a command printed gives the record's key,
// value and every header, in order, by the one rule: as text when the bytes are printable
// text, else exactly in key_base64 / value_base64.
func checkRecordJSON(t *testing.T, r result, key, value []byte, headers []kgo.RecordHeader) {
	t.Helper()
	var out struct {
		jsonBytes
		Headers []struct {
			Key       string `json:"key"`
			KeyBase64 []byte `json:"key_base64"`
			jsonBytes
		} `json:"headers"`
	}
	if err := json.Unmarshal(r.stdout, &out); err != nil {
		t.Errorf("fieldwork %s: %v", cmdline(r.args), err)
		return
	}
	checkBytesJSON(t, r, "key", out.Key, out.KeyBase64, key)
	checkBytesJSON(t, r, "value", out.Value, out.ValueBase64, value)
	if len(out.Headers) != len(headers) {
		t.Errorf("fieldwork %s: %d headers, want %d", cmdline(r.args), len(out.Headers), len(headers))
		return
	}
	for i, h := range out.Headers {
		checkBytesJSON(t, r, fmt.Sprintf("header %d key", i), &h.Key, h.KeyBase64, []byte(headers[i].Key))
		checkBytesJSON(t, r, fmt.Sprintf("header %d value", i), h.Value, h.ValueBase64, headers[i].Value)
	}
}

// checkBytesJSON checks one field of record bytes: null for nil; text, and no *_base64, when
// want is printable text (UTF-8 that terminalUnsafe finds nothing in); else *_base64 holds
// want exactly.
func checkBytesJSON(t *testing.T, r result, what string, text *string, exact, want []byte) {
	t.Helper()
	switch {
	case want == nil:
		if text != nil || exact != nil {
			t.Errorf("fieldwork %s: %s is null, but the JSON gives %v / %q", cmdline(r.args), what, text, exact)
		}
	case text == nil:
		t.Errorf("fieldwork %s: %s is null in the JSON, want %s", cmdline(r.args), what, clip(want))
	case terminalUnsafe(want) == "":
		if *text != string(want) || exact != nil {
			t.Errorf("fieldwork %s: %s %s is text, but the JSON gives %q and base64 %q", cmdline(r.args), what, clip(want), *text, exact)
		}
	case !bytes.Equal(exact, want):
		t.Errorf("fieldwork %s: %s %s is not printable text, but its *_base64 is %s", cmdline(r.args), what, clip(want), clip(exact))
	}
}

// checkJSONLines fails the test unless every line of b is a valid JSON value.
func checkJSONLines(t *testing.T, what string, b []byte) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		if !json.Valid(sc.Bytes()) {
			t.Errorf("%s line %d is not JSON: %s", what, n, clip(sc.Bytes()))
		}
	}
}
