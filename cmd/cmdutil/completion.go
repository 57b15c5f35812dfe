package cmdutil

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/replay"
)

// completionTimeout bounds how long a shell waits for a dynamic completion: a completion
// that cannot reach the broker or the store offers nothing rather than hanging the prompt.
const completionTimeout = 3 * time.Second

// topicFlags, consumerFlags: flags whose values are topic or consumer names, wherever a
// command defines them (a group a replay is for, --for-group, names its markers by default).
var (
	topicFlags    = []string{"topic", "from", "to", "original-topic", "dlq-topic"}
	consumerFlags = []string{"consumer", "for-group"}
)

// topicArgCommands take a topic (or a T/P/O coordinate starting with one) as first argument.
var topicArgCommands = map[string]bool{
	"fieldwork inspect topic": true, "fieldwork inspect record": true, "fieldwork inspect records": true,
	"fieldwork inspect aggregate": true, "fieldwork inspect validate": true,
	"fieldwork dlq show": true, "fieldwork replay": true,
}

// groupArgCommands take a consumer group as first argument; groupFlags are flags whose
// values are consumer group names.
var (
	groupArgCommands = map[string]bool{
		"fieldwork groups describe": true, "fieldwork groups skip": true, "fieldwork groups reset": true,
	}
	groupFlags = []string{"group"}
)

// runArgCommands take a replay run id as first argument, and say the statuses of the runs to
// offer (none: every run).
var runArgCommands = map[string][]string{
	"fieldwork replay resume": replay.ResumableStatuses,
	"fieldwork replay show":   nil,
}

// completionRuns bounds the runs a completion offers, so that a journal of any size answers
// within completionTimeout: the newest completionRuns of each status offered (of every run,
// for show). Each status is asked for on its own, so a resumable run is offered however many
// completed runs are newer; beyond that many of one status, `replay runs --status S --limit N`
// lists them.
const completionRuns = 200

// enumFlags are flags whose values are one of a fixed set, the same wherever a command
// defines them, unless the command registered its own (replay's --status, a subset).
// A repeatable or comma-separated flag completes the value after the last comma.
var enumFlags = map[string][]string{
	"status":     statusNames(),
	"dlq-reason": append(append([]string(nil), dlq.Reasons...), "unknown"),
	"group-by":   statsKeyNames(),
}

func statusNames() []string {
	out := make([]string, len(dlq.Statuses))
	for i, s := range dlq.Statuses {
		out[i] = string(s)
	}
	return out
}

func statsKeyNames() []string {
	out := make([]string, len(dlq.StatsKeys))
	for i, k := range dlq.StatsKeys {
		out[i] = string(k)
	}
	return out
}

// completeList offers values for the part of a comma-separated list after its last comma,
// leaving out those already given, each with the list before it.
func completeList(values []string) completeFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		done, last := "", toComplete
		if i := strings.LastIndex(toComplete, ","); i >= 0 {
			done, last = toComplete[:i+1], toComplete[i+1:]
		}
		given := map[string]bool{}
		for _, v := range strings.Split(done, ",") {
			given[v] = true
		}
		var out []string
		for _, v := range values {
			if strings.HasPrefix(v, last) && !given[v] {
				out = append(out, done+v)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
}

// AddDynamicCompletion walks the command tree once and registers completion of topic names,
// consumer names and replay run ids where a connection is configured (flags, environment
// or context). It keeps that knowledge in one place instead of in every command.
func AddDynamicCompletion(f *Factory, root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, name := range topicFlags {
			if c.Flags().Lookup(name) != nil {
				complete := f.completeTopics
				if name == "topic" && readsDeadLetters(c.CommandPath()) {
					complete = f.completeDLQTopics
				}
				_ = c.RegisterFlagCompletionFunc(name, complete)
			}
		}
		for name, values := range enumFlags {
			if c.Flags().Lookup(name) != nil {
				if _, ok := c.GetFlagCompletionFunc(name); !ok {
					_ = c.RegisterFlagCompletionFunc(name, completeList(values))
				}
			}
		}
		for _, name := range groupFlags {
			if c.Flags().Lookup(name) != nil {
				_ = c.RegisterFlagCompletionFunc(name, f.completeGroups)
			}
		}
		for _, name := range consumerFlags {
			if c.Flags().Lookup(name) != nil {
				_ = c.RegisterFlagCompletionFunc(name, f.completeConsumers)
			}
		}
		if c.ValidArgsFunction == nil {
			path := c.CommandPath()
			if statuses, ok := runArgCommands[path]; ok {
				c.ValidArgsFunction = firstArg(f.completeRuns(statuses))
			} else if topicArgCommands[path] {
				c.ValidArgsFunction = firstArg(f.completeTopicArg)
				if readsDeadLetters(path) {
					c.ValidArgsFunction = firstArg(f.completeDLQTopics)
				}
			} else if groupArgCommands[path] {
				c.ValidArgsFunction = firstArg(f.completeGroups)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

type completeFunc = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective)

func firstArg(fn completeFunc) completeFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return fn(c, args, toComplete)
	}
}

func completionContext(c *cobra.Command) (context.Context, context.CancelFunc) {
	ctx := c.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithTimeout(ctx, completionTimeout)
}

// completeTopics offers the cluster's topic names (internal ones left out).
func (f *Factory) completeTopics(c *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	return f.completeNames(c, toComplete, (*kafka.Cluster).TopicNames)
}

// readsDeadLetters reports whether the command at path reads dead-letter topics with --topic
// (or its argument): the dlq commands, triage and replay.
func readsDeadLetters(path string) bool {
	return strings.HasPrefix(path, "fieldwork dlq ") || path == "fieldwork triage" || path == "fieldwork replay"
}

// completeDLQTopics offers the dead-letter topics, as the dlq commands find them without
// --topic (the configured pattern, else dlq.DefaultTopicPattern, and the share groups'), that
// start with toComplete; every topic that does when none of those does (a dead-letter topic
// named otherwise).
func (f *Factory) completeDLQTopics(c *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	return f.completeNames(c, toComplete, func(cl *kafka.Cluster, ctx context.Context, prefix string) ([]string, error) {
		var pattern *regexp.Regexp
		if p, _, err := f.DLQPattern(); err == nil && p != "" {
			pattern, _ = regexp.Compile(p)
		}
		var out []string
		if d, err := dlq.Discover(ctx, cl, nil, pattern); err == nil {
			for _, t := range d.Topics {
				if strings.HasPrefix(t, prefix) {
					out = append(out, t)
				}
			}
		}
		if len(out) == 0 {
			return cl.TopicNames(ctx, prefix)
		}
		return out, nil
	})
}

// completeTopicArg is completeTopics for a command's topic argument: none once --topic names
// the topic (inspect aggregate --topic T ID: the argument is the aggregate's id).
func (f *Factory) completeTopicArg(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if c.Flags().Changed("topic") {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return f.completeTopics(c, args, toComplete)
}

// completeGroups offers the cluster's consumer group names.
func (f *Factory) completeGroups(c *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	return f.completeNames(c, toComplete, (*kafka.Cluster).GroupNames)
}

// completeNames offers the names list reads of the cluster, starting with toComplete;
// nothing when the cluster does not answer within the completion's time.
func (f *Factory) completeNames(c *cobra.Command, toComplete string, list func(*kafka.Cluster, context.Context, string) ([]string, error)) ([]string, cobra.ShellCompDirective) {
	ctx, cancel := completionContext(c)
	defer cancel()
	cl, err := f.kafka(ctx, completionTimeout)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer cl.Close()
	names, err := list(cl, ctx, toComplete)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// completeConsumers offers the consumer names that have markers in the store.
func (f *Factory) completeConsumers(c *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	return f.completeFromStore(c, func(ctx context.Context, st *dedup.Store) ([]string, error) {
		stats, err := st.Stats(ctx, dedup.StatsFilter{Window: time.Hour})
		if err != nil {
			return nil, err
		}
		var out []string
		for _, cs := range stats.Consumers {
			if strings.HasPrefix(cs.Consumer, toComplete) {
				out = append(out, fmt.Sprintf("%s\t%d markers", cs.Consumer, cs.Count))
			}
		}
		return out, nil
	})
}

// completeRuns offers the journaled replay runs of statuses (every run when none), newest
// first, described by status and reason.
func (f *Factory) completeRuns(statuses []string) completeFunc {
	return func(c *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return f.completeFromStore(c, func(ctx context.Context, st *dedup.Store) ([]string, error) {
			var runs []dedup.ReplayRun
			for _, status := range statuses {
				rs, err := st.ReplayRuns(ctx, dedup.ReplayRunFilter{Status: status, Limit: completionRuns})
				if err != nil {
					return nil, err
				}
				runs = append(runs, rs...)
			}
			if len(statuses) == 0 {
				rs, err := st.ReplayRuns(ctx, dedup.ReplayRunFilter{Limit: completionRuns})
				if err != nil {
					return nil, err
				}
				runs = rs
			}
			slices.SortStableFunc(runs, func(a, b dedup.ReplayRun) int { return b.CreatedAt.Compare(a.CreatedAt) })
			var out []string
			for _, r := range runs {
				if strings.HasPrefix(r.ID, toComplete) {
					out = append(out, fmt.Sprintf("%s\t%s: %s", r.ID, r.Status, r.Reason))
				}
			}
			return out, nil
		})
	}
}

// completeFromStore offers what list finds in the store, within the completion's time bound;
// nothing when the store cannot be reached or read.
func (f *Factory) completeFromStore(c *cobra.Command, list func(context.Context, *dedup.Store) ([]string, error)) ([]string, cobra.ShellCompDirective) {
	ctx, cancel := completionContext(c)
	defer cancel()
	naming := StoreNamingOf(c.Flags())
	st, err := f.WithStoreNaming(&naming).openStore(ctx, false, completionTimeout)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer st.Close()
	out, err := list(ctx, st)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// portableBashInit replaces, in a shell without the bash-completion package, the function
// cobra's bash script falls back to, which needs that package's _get_comp_words_by_ref: the
// words are those of the line up to the cursor, split at blanks only (so that --flag=value
// and topic:partition stay one word, as `_get_comp_words_by_ref -n =:` gives them).
const portableBashInit = `
# Without the bash-completion package: split the line up to the cursor at blanks.
if ! declare -F _get_comp_words_by_ref >/dev/null 2>&1; then
__%[1]s_init_completion()
{
    COMPREPLY=()
    local line="${COMP_LINE:0:COMP_POINT}"
    read -r -a words <<< "$line"
    if [[ -z $line || $line == *[[:blank:]] ]]; then
        words+=("")
    fi
    cword=$(( ${#words[@]} - 1 ))
    cur="${words[cword]}"
    prev=""
    if (( cword > 0 )); then
        prev="${words[cword-1]}"
    fi
}
fi
`

// PortableBashCompletion makes `completion bash` write cobra's bash completion (V2) followed
// by portableBashInit, so that it works in a bash without the bash-completion package.
func PortableBashCompletion(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		for _, sh := range c.Commands() {
			if sh.Name() != "bash" {
				continue
			}
			sh.Long += "\n\nThe script works without the bash-completion package too."
			sh.RunE = func(cmd *cobra.Command, _ []string) error {
				noDesc, _ := cmd.Flags().GetBool("no-descriptions")
				var b strings.Builder
				if err := cmd.Root().GenBashCompletionV2(&b, !noDesc); err != nil {
					return err
				}
				fmt.Fprintf(&b, portableBashInit, cmd.Root().Name())
				_, err := io.WriteString(cmd.OutOrStdout(), b.String())
				return err
			}
			sh.Run = nil
		}
	}
}
