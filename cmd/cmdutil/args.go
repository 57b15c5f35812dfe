package cmdutil

import (
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

// MaxArgs refuses more than n arguments, with a message that names what may be given.
func MaxArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > n {
			return fwerr.Usagef("%s takes %s (got %d arguments)", cmd.CommandPath(), what, len(args))
		}
		return nil
	}
}

// AtLeastOne refuses a value below 1 of the count flag --name.
func AtLeastOne(name string, v int) error {
	if v < 1 {
		return fwerr.Usagef("--%s %d: must be at least 1", name, v)
	}
	return nil
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
