package output_test

import (
	"os"
	"strconv"

	"github.com/fieldwork/fieldwork/internal/output"
)

type deadLetter struct {
	Topic  string `json:"topic"`
	Offset int64  `json:"offset"`
}

// A command that lists what a scan finds writes each result as it comes and says, when it
// stopped at its --limit, that more remain.
func ExampleNewStream() {
	s := &output.Streams{Out: os.Stdout, ErrOut: os.Stdout}
	p := output.NewPrinter(s, output.FormatJSONL)
	columns := []output.Column[deadLetter]{
		{Name: "topic", Value: func(d deadLetter) string { return d.Topic }},
		{Name: "offset", Value: func(d deadLetter) string { return strconv.FormatInt(d.Offset, 10) }},
	}
	st := output.NewStream(p, columns, output.StreamOptions[deadLetter]{
		Noun: "dead letters", MoreHint: "raise --limit", MarkTruncated: true,
	})
	for i := range int64(2) {
		_ = st.Write(deadLetter{Topic: "tasks.dlq", Offset: i})
	}
	st.Truncated(2)
	_ = st.Close()
	// Output:
	// {"topic":"tasks.dlq","offset":0}
	// {"topic":"tasks.dlq","offset":1}
	// {"_truncated":{"limit":2,"written":2}}
	// showing the first 2 dead letters: more remain (raise --limit)
}
