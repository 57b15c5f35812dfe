package cmdutil

import (
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

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

// CheckTopics refuses an empty --topic value.
func CheckTopics(topics []string) error {
	for _, t := range topics {
		if strings.TrimSpace(t) == "" {
			return fwerr.Usagef("--topic: empty topic name")
		}
	}
	return nil
}

// CountVar defines the count flag --name: a whole number of at least 1, so that "how many"
// flags (--limit of a journal, --batch-size, --max-events, …) refuse 0 and negatives where
// they are parsed, with one message, and a command never checks one itself.
func CountVar(fs *pflag.FlagSet, p *int, name string, def int, usage string) {
	*p = def
	fs.Var((*countValue)(p), name, usage)
}

// countValue is pflag's Value of a CountVar flag.
type countValue int

func (v *countValue) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return fwerr.Usagef("want a whole number")
	}
	if n < 1 {
		return fwerr.Usagef("must be at least 1")
	}
	*v = countValue(n)
	return nil
}

func (v *countValue) String() string { return strconv.Itoa(int(*v)) }

// Type names the value in help: "int", like pflag's own.
func (v *countValue) Type() string { return "int" }
