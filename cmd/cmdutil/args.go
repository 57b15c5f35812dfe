package cmdutil

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
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

// ParseRecordAddress is kafka.ParseRecordAddress taken apart, for the commands that keep the
// three parts in fields of their own.
func ParseRecordAddress(s string) (topic string, partition int32, offset int64, err error) {
	a, err := kafka.ParseRecordAddress(s)
	return a.Topic, a.Partition, a.Offset, err
}
