package cmdutil

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/fieldwork/fieldwork/internal/output"
	"github.com/fieldwork/fieldwork/internal/printable"
	"github.com/fieldwork/fieldwork/internal/schema"
)

// BytesText is record bytes (a key, a header, a value) as a table or CSV gives them, by the
// rule JSON follows (docs/design.md §4.1): their text when it is printable, else their
// standard base64 with ok false.
func BytesText(b []byte) (text string, ok bool) {
	if printable.Is(string(b)) {
		return string(b), true
	}
	return base64.StdEncoding.EncodeToString(b), false
}

// BytesDisplay shows a key or header value in a detail view: its text, its base64 flagged as
// such, "" for empty, (none) for null.
func BytesDisplay(st output.Styles, b []byte) string {
	switch {
	case b == nil:
		return st.Dim.Render("(none)")
	case len(b) == 0:
		return st.Dim.Render(`""`)
	}
	t, ok := BytesText(b)
	if !ok {
		return t + st.Warn.Render(fmt.Sprintf(" (base64: %d bytes, not text)", len(b)))
	}
	return t
}

// KeyDisplay shows a header's key, or a record key in a table cell: its text, or its base64
// flagged as such.
func KeyDisplay(key string) string {
	t, ok := BytesText([]byte(key))
	if !ok {
		t += " (base64)"
	}
	return t
}

// ValueSection shows a record's value: indented when it is JSON (valueJSON, the value when it
// is valid JSON), else its text, or its base64 under a title that says so; (null) and (empty)
// for no value.
//
// A value decoded through a schema registry (p, nil when the value is not framed) is shown as
// its decoded JSON under a title naming its format and schema; one that did not decode keeps
// its bytes, and the title says why.
func ValueSection(st output.Styles, value []byte, valueJSON json.RawMessage, p *schema.Payload) output.Section {
	s := output.Section{Title: "Value"}
	var pretty bytes.Buffer
	if p != nil && len(p.Decoded) > 0 && json.Indent(&pretty, p.Decoded, "", "  ") == nil {
		s.Title = fmt.Sprintf("Value (%s, %d bytes)", PayloadDisplay(p), len(value))
		s.Text = pretty.String()
		return s
	}
	switch {
	case value == nil:
		s.Text = st.Dim.Render("(null)")
	case len(value) == 0:
		s.Text = st.Dim.Render("(empty)")
	case len(valueJSON) > 0 && json.Indent(&pretty, valueJSON, "", "  ") == nil:
		s.Text = pretty.String()
	default:
		t, ok := BytesText(value)
		if !ok {
			s.Title = fmt.Sprintf("Value (%d bytes, not text: base64)", len(value))
		}
		s.Text = t
	}
	if p != nil {
		s.Title += " - " + PayloadDisplay(p)
	}
	return s
}

// PayloadDisplay names a framed key's or value's schema in a detail view: "avro, schema id
// 42, subject orders-value", "Protobuf message fieldwork.orders.Order.Line", and what went
// wrong when it did not decode.
func PayloadDisplay(p *schema.Payload) string {
	if p == nil {
		return ""
	}
	parts := []string{}
	if p.Format != "" {
		parts = append(parts, string(p.Format))
	}
	parts = append(parts, "schema "+p.Ref.String(), string(p.Framing))
	if p.SchemaSubject != "" {
		parts = append(parts, "subject "+p.SchemaSubject)
	}
	if p.Message != "" {
		parts = append(parts, "message "+p.Message)
	}
	switch e := p.Err(); {
	case e == nil:
	case e.Problem == schema.ProblemNoRegistry:
		parts = append(parts, "not decoded: no --schema-registry")
	default:
		parts = append(parts, "not decoded: "+string(e.Problem))
	}
	return strings.Join(parts, ", ")
}

// KeySchemaFields are the detail view's fields of a registry-framed key: its schema and,
// decoded, its JSON; none for a key that is not framed.
func KeySchemaFields(p *schema.Payload) [][2]string {
	if p == nil {
		return nil
	}
	f := [][2]string{{"key schema", PayloadDisplay(p)}}
	if len(p.Decoded) > 0 {
		f = append(f, [2]string{"key decoded", string(p.Decoded)})
	}
	return f
}
