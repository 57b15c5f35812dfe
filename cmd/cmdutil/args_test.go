package cmdutil

import (
	"strings"
	"testing"

	"github.com/fieldwork/fieldwork/internal/fwerr"
)

func TestParseRecordAddress(t *testing.T) {
	cases := []struct {
		in      string
		topic   string
		p       int32
		o       int64
		wantErr string
	}{
		{in: "tasks/0/42", topic: "tasks", p: 0, o: 42},
		{in: "tasks.dlq/3/0", topic: "tasks.dlq", p: 3, o: 0},
		{in: "tasks/1@7", topic: "tasks", p: 1, o: 7},
		{in: "a/b/2/9", topic: "a/b", p: 2, o: 9},
		{in: "tasks", wantErr: "no offset"},
		{in: "tasks/5", wantErr: "no partition"},
		{in: "/0/1", wantErr: "no topic"},
		{in: "tasks/x/1", wantErr: `partition "x"`},
		{in: "tasks/-1/1", wantErr: `partition "-1"`},
		{in: "tasks/0/-3", wantErr: `offset "-3"`},
		{in: "tasks/0/", wantErr: `offset ""`},
	}
	for _, tc := range cases {
		topic, p, o, err := ParseRecordAddress(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || fwerr.KindOf(err) != fwerr.KindUsage {
				t.Errorf("%q: err %v, want usage error with %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || topic != tc.topic || p != tc.p || o != tc.o {
			t.Errorf("%q = %q %d %d %v", tc.in, topic, p, o, err)
		}
	}
}
