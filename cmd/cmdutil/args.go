package cmdutil

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/internal/fwerr"
)

// ExactArgs is cobra.ExactArgs with a message that names the arguments expected.
func ExactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return fwerr.Usagef("%s takes %s (got %d argument(s))", cmd.CommandPath(), what, len(args))
		}
		return nil
	}
}

// CheckTopics refuses an empty --topic value.
func CheckTopics(topics []string) error {
	for _, t := range topics {
		if strings.TrimSpace(t) == "" {
			return fwerr.Usagef("--topic: empty topic name")
		}
	}
	return nil
}

// ParseRecordAddress splits TOPIC/PARTITION/OFFSET (or TOPIC/PARTITION@OFFSET) on the last
// separators, so the topic keeps any other character.
func ParseRecordAddress(s string) (topic string, partition int32, offset int64, err error) {
	bad := func(why string) error {
		return fwerr.Usagef("record address %q: %s (want TOPIC/PARTITION/OFFSET, e.g. tasks/0/42)", s, why)
	}
	var rest, off string
	if i := strings.LastIndexByte(s, '@'); i >= 0 && strings.LastIndexByte(s, '/') < i {
		rest, off = s[:i], s[i+1:]
	} else {
		i := strings.LastIndexByte(s, '/')
		if i < 0 {
			return "", 0, 0, bad("no offset")
		}
		rest, off = s[:i], s[i+1:]
	}
	i := strings.LastIndexByte(rest, '/')
	if i < 0 {
		return "", 0, 0, bad("no partition")
	}
	topic, part := rest[:i], rest[i+1:]
	if topic == "" {
		return "", 0, 0, bad("no topic")
	}
	p, perr := strconv.ParseInt(part, 10, 32)
	if perr != nil || p < 0 {
		return "", 0, 0, bad(fmt.Sprintf("partition %q is not a number from 0", part))
	}
	o, oerr := strconv.ParseInt(off, 10, 64)
	if oerr != nil || o < 0 {
		return "", 0, 0, bad(fmt.Sprintf("offset %q is not a number from 0", off))
	}
	return topic, int32(p), o, nil
}
