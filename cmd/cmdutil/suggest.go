package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/agnivade/levenshtein"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/timespec"
)

// suggestDistance is the largest edit distance a suggestion may be from what was typed: two
// edits catch a swapped pair of letters (valdiate, lsit) and a letter too many or too few.
const suggestDistance = 2

// Suggestions are the candidates close to typed (docs/design.md §4: one rule for mistyped
// commands and flags): within suggestDistance edits (case-insensitive), or starting with
// it, nearest first.
func Suggestions(typed string, candidates []string) []string {
	type scored struct {
		name string
		d    int
	}
	low := strings.ToLower(typed)
	var out []scored
	for _, c := range candidates {
		d := levenshtein.ComputeDistance(low, strings.ToLower(c))
		if d <= suggestDistance || (low != "" && strings.HasPrefix(strings.ToLower(c), low)) {
			out = append(out, scored{c, d})
		}
	}
	slices.SortStableFunc(out, func(a, b scored) int { return a.d - b.d })
	names := make([]string, 0, len(out))
	for _, s := range out {
		if !slices.Contains(names, s.name) {
			names = append(names, s.name)
		}
	}
	return names
}

// didYouMean is the suffix of an error naming the suggestions, "" when there are none.
func didYouMean(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return "\n\nDid you mean this?\n\t" + strings.Join(names, "\n\t") + "\n"
}

// SubcommandArgs is the Args of a command group: no argument, and an argument that is not
// a subcommand is an unknown command with the subcommands (and aliases) close to it.
func SubcommandArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	return fmt.Errorf("unknown command %q for %q%s", args[0], cmd.CommandPath(), SubcommandHint(cmd, args[0]))
}

// SubcommandHint names the subcommands of cmd close to arg (by name or alias), for the error
// of an argument that may be a mistyped subcommand; "" when none is.
func SubcommandHint(cmd *cobra.Command, arg string) string {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
			names = append(names, c.Aliases...)
		}
	}
	var subs []string
	for _, n := range Suggestions(arg, names) {
		if c, _, err := cmd.Find([]string{n}); err == nil && c != cmd && !slices.Contains(subs, c.Name()) {
			subs = append(subs, c.Name())
		}
	}
	return didYouMean(subs)
}

var unknownFlag = regexp.MustCompile(`^unknown (?:shorthand )?flag: (?:'.' in )?-{1,2}([^\s=]+)`)

// flagSynonyms are the flags that name the same thing: the topic a command reads is --topic
// in every command, and --from was replay's old name for it (still read there, hidden, with a
// note). An unknown flag of one of a set is answered with the others that cmd has (dlq list
// --from: --topic), however far they are spelled.
var flagSynonyms = [][]string{{"topic", "from"}}

// badTime is pflag's error for a value its flag refused: the value, the flag, the reason.
var badTime = regexp.MustCompile(`^invalid argument "(?:[^"\\]|\\.)*" for "(?:-., )?--([^"]+)" flag: (.*)$`)

// FlagError adds to an unknown flag the flags of cmd close to it (--tpoic: --topic) and its
// synonyms (flagSynonyms), and says a bad time the one way every time is refused, whichever
// flag or path reads it: `--since: "yesterday" is not a time: … (want …)` (timespec.ParseTime's
// message, named by its flag).
func FlagError(cmd *cobra.Command, err error) error {
	if m := badTime.FindStringSubmatch(err.Error()); m != nil {
		if f := cmd.Flags().Lookup(m[1]); f != nil {
			if _, ok := FlagValue(f).(*timespec.TimeValue); ok {
				return fmt.Errorf("--%s: %s", m[1], m[2])
			}
		}
	}
	m := unknownFlag.FindStringSubmatch(err.Error())
	if m == nil || len(m[1]) < 2 {
		return err
	}
	var names []string
	add := func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	}
	cmd.LocalFlags().VisitAll(add)
	cmd.InheritedFlags().VisitAll(add)
	var flags []string
	for _, set := range flagSynonyms {
		if !slices.Contains(set, m[1]) {
			continue
		}
		for _, n := range set {
			if n != m[1] && slices.Contains(names, n) {
				flags = append(flags, "--"+n)
			}
		}
	}
	for _, n := range Suggestions(m[1], names) {
		if !slices.Contains(flags, "--"+n) {
			flags = append(flags, "--"+n)
		}
	}
	if len(flags) == 0 {
		return err
	}
	return fmt.Errorf("%w%s", err, didYouMean(flags))
}

// wantChoice is how fieldwork refuses a value outside a fixed set, in every command:
// `--status "resolve": want some of pending, replayed, …`, `cannot group by "reasn": want some
// of …`, `unknown output format "x" (want one of table, json, …)`.
var wantChoice = regexp.MustCompile(`"([^"]+)"\)?:? \(?want (?:one|some) of ([^()]+?)\)?$`)

// ValueHint is the "Did you mean this?" of an error that refuses a value outside a fixed set:
// the choices close to the value given ("" when the error is not one, or none is close).
func ValueHint(err error) string {
	m := wantChoice.FindStringSubmatch(err.Error())
	if m == nil {
		return ""
	}
	var choices []string
	for _, c := range strings.Split(strings.ReplaceAll(m[2], " or ", ", "), ", ") {
		if c = strings.TrimSpace(c); c != "" {
			choices = append(choices, c)
		}
	}
	return didYouMean(Suggestions(m[1], choices))
}

// unknownGroup is how a command refuses a consumer group the cluster does not have.
var unknownGroup = regexp.MustCompile(`consumer group "([^"]+)" does not exist`)

// NameHint adds to an error that names a topic or a consumer group the cluster does not have
// the cluster's names close to it ("Did you mean this? tasks"), read within the completion's
// time bound; err as it is otherwise (and when c is nil or cannot list them).
func NameHint(ctx context.Context, c *kafka.Cluster, err error) error {
	if err == nil || c == nil {
		return err
	}
	var name string
	var list func(context.Context, string) ([]string, error)
	var unknownTopic *kafka.UnknownTopicError
	if errors.As(err, &unknownTopic) {
		name, list = unknownTopic.Topic, c.TopicNames
	} else if m := unknownGroup.FindStringSubmatch(err.Error()); m != nil {
		name, list = m[1], c.GroupNames
	} else {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, completionTimeout)
	defer cancel()
	names, lerr := list(ctx, "")
	if lerr != nil {
		return err
	}
	names = slices.DeleteFunc(names, func(n string) bool { return n == name })
	if hint := didYouMean(Suggestions(name, names)); hint != "" {
		return fwerr.Wrap(fwerr.KindOf(err), fmt.Errorf("%w%s", err, strings.TrimSuffix(hint, "\n")))
	}
	return err
}
