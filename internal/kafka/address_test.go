package kafka

import (
	"strings"
	"testing"

	"github.com/fieldwork/fieldwork/internal/fwerr"
)

func TestRecordAddress(t *testing.T) {
	long := strings.Repeat("t", MaxTopicLength)
	cases := []struct {
		in      string
		want    RecordAddress
		errPart string
	}{
		{in: "tasks/0/14", want: RecordAddress{"tasks", 0, 14}},
		{in: " tasks.dlq/2/9000000000 ", want: RecordAddress{"tasks.dlq", 2, 9000000000}},
		{in: "orders_v2-EU/2147483647/0", want: RecordAddress{"orders_v2-EU", 2147483647, 0}},
		{in: long + "/1/2", want: RecordAddress{long, 1, 2}},
		// The spelling of fieldwork's older messages, still inside dead letters' headers.
		{in: "tasks/0@14", want: RecordAddress{"tasks", 0, 14}},
		{in: "", errPart: "empty"},
		{in: "tasks", errPart: "no partition and offset"},
		{in: "tasks/0", errPart: "no offset"},
		{in: "tasks/0/", errPart: "no offset"},
		{in: "tasks//14", errPart: "no partition"},
		{in: "/0/14", errPart: "no topic name"},
		{in: "a/b/0/14", errPart: "too many slashes"},
		{in: "tasks/x/14", errPart: `partition "x" is not a number`},
		{in: "tasks/-1/14", errPart: `partition "-1" is not a number`},
		{in: "tasks/+1/14", errPart: `partition "+1" is not a number`},
		{in: "tasks/2147483648/14", errPart: `partition "2147483648"`},
		{in: "tasks/0/-3", errPart: `offset "-3" is not a number`},
		{in: "tasks/0/1e3", errPart: `offset "1e3"`},
		{in: "tasks/0@", errPart: "no offset"},
		{in: "tâches/0/1", errPart: `not 'â'`},
		{in: "my topic/0/1", errPart: `not ' '`},
		{in: "../0/1", errPart: `".." is not a topic name`},
		{in: long + "t/0/1", errPart: "at most 249 characters, this one has 250"},
	}
	for _, c := range cases {
		got, err := ParseRecordAddress(c.in)
		if c.errPart == "" {
			if err != nil || got != c.want {
				t.Errorf("ParseRecordAddress(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
			}
			if back, err := ParseRecordAddress(got.String()); err != nil || back != got {
				t.Errorf("%q written as %q reads back as %+v, %v", c.in, got.String(), back, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("ParseRecordAddress(%q) = %+v, want an error saying %q", c.in, got, c.errPart)
			continue
		}
		if fwerr.KindOf(err) != fwerr.KindUsage || !strings.Contains(err.Error(), c.errPart) || !strings.Contains(err.Error(), "TOPIC/PARTITION/OFFSET") {
			t.Errorf("ParseRecordAddress(%q): %v (kind %v), want a usage error saying %q and the form", c.in, err, fwerr.KindOf(err), c.errPart)
		}
	}
	if s := (RecordAddress{"tasks", 3, 42}).String(); s != "tasks/3/42" {
		t.Errorf("String = %q", s)
	}
}

func TestCheckTopic(t *testing.T) {
	for _, ok := range []string{"tasks", "a", "A.b_c-9", ".x", strings.Repeat("x", 249)} {
		if !ValidTopic(ok) || CheckTopic(ok) != nil {
			t.Errorf("%q refused: %v", ok, CheckTopic(ok))
		}
	}
	for _, bad := range []string{"", ".", "..", "a/b", "a b", "a@b", "é", strings.Repeat("x", 250)} {
		err := CheckTopic(bad)
		if ValidTopic(bad) || err == nil || fwerr.KindOf(err) != fwerr.KindUsage {
			t.Errorf("%q accepted (%v)", bad, err)
		}
	}
}
