package output

import (
	"strconv"
	"strings"
	"testing"
)

type row struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

var cols = []Column[row]{
	{Name: "name", Value: func(r row) string { return r.Name }},
	{Name: "count", Value: func(r row) string { return strconv.Itoa(r.Count) }},
}

func TestListFormats(t *testing.T) {
	items := []row{{"a", 1}, {"bb", 2}}
	cases := map[Format]string{
		FormatJSON:  "[\n  {\n    \"name\": \"a\",\n    \"count\": 1\n  },\n  {\n    \"name\": \"bb\",\n    \"count\": 2\n  }\n]\n",
		FormatJSONL: "{\"name\":\"a\",\"count\":1}\n{\"name\":\"bb\",\"count\":2}\n",
		FormatCSV:   "name,count\na,1\nbb,2\n",
		FormatTable: "NAME  COUNT\na     1\nbb    2\n",
	}
	for f, want := range cases {
		s, _, out, _ := Test()
		if err := List(NewPrinter(s, f), items, cols, "nothing"); err != nil {
			t.Fatal(err)
		}
		got := out.String()
		if f == FormatTable {
			got = trimLines(got)
		}
		if got != want {
			t.Errorf("%s:\n got %q\nwant %q", f, got, want)
		}
	}
}

func TestListEmpty(t *testing.T) {
	s, _, out, errOut := Test()
	if err := List(NewPrinter(s, FormatJSON), []row(nil), cols, "nothing"); err != nil {
		t.Fatal(err)
	}
	if out.String() != "[]\n" {
		t.Errorf("json empty = %q", out.String())
	}
	s, _, out, errOut = Test()
	_ = List(NewPrinter(s, FormatTable), []row{}, cols, "no rows")
	if out.Len() != 0 || errOut.String() != "no rows\n" {
		t.Errorf("table empty: out %q err %q", out.String(), errOut.String())
	}
}

func TestNoColour(t *testing.T) {
	s, _, out, _ := Test()
	s.OutTTY = true
	s.NoColor = true
	_ = List(NewPrinter(s, FormatTable), []row{{"a", 1}}, cols, "")
	if strings.Contains(out.String(), "\x1b[") {
		t.Errorf("NO_COLOR output has escape codes: %q", out.String())
	}
	s, _, out, _ = Test()
	s.OutTTY = true
	_ = List(NewPrinter(s, FormatTable), []row{{"a", 1}}, cols, "")
	if !strings.Contains(out.String(), "\x1b[") {
		t.Errorf("terminal output has no styling: %q", out.String())
	}
}

func TestParseFormat(t *testing.T) {
	if f, _ := ParseFormat("", true); f != FormatTable {
		t.Errorf("tty default = %s", f)
	}
	if f, _ := ParseFormat("", false); f != FormatJSONL {
		t.Errorf("pipe default = %s", f)
	}
	if _, err := ParseFormat("yaml", false); err == nil {
		t.Error("yaml accepted")
	}
}

func trimLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}
