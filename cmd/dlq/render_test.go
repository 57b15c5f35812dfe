package dlq

import (
	"fmt"
	"testing"
)

// TestDLQTopicList: a message names up to ten topics, and beyond that the first ten and how
// many there are.
func TestDLQTopicList(t *testing.T) {
	var forty []string
	for i := range 40 {
		forty = append(forty, fmt.Sprintf("t%02d.dlq", i))
	}
	for _, tc := range []struct {
		topics []string
		want   string
	}{
		{nil, "no topic"},
		{forty[:2], "t00.dlq, t01.dlq"},
		{forty[:10], "t00.dlq, t01.dlq, t02.dlq, t03.dlq, t04.dlq, t05.dlq, t06.dlq, t07.dlq, t08.dlq, t09.dlq"},
		{forty, "40 topics (t00.dlq, t01.dlq, t02.dlq, t03.dlq, t04.dlq, t05.dlq, t06.dlq, t07.dlq, t08.dlq, t09.dlq, …)"},
	} {
		if got := dlqTopicList(tc.topics); got != tc.want {
			t.Errorf("%d topics: %q, want %q", len(tc.topics), got, tc.want)
		}
	}
}
