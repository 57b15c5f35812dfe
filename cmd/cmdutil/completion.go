package cmdutil

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/internal/dedup"
)

// completionTimeout bounds how long a shell waits for a dynamic completion: a completion
// that cannot reach the broker or the store offers nothing rather than hanging the prompt.
const completionTimeout = 3 * time.Second

// topicFlags, consumerFlags: flags whose values are topic or consumer names, wherever a
// command defines them.
var (
	topicFlags    = []string{"topic", "from", "to", "original-topic", "dlq-topic"}
	consumerFlags = []string{"consumer"}
)

// topicArgCommands take a topic (or a T/P/O coordinate starting with one) as first argument.
var topicArgCommands = map[string]bool{
	"fieldwork inspect topic": true, "fieldwork inspect record": true,
	"fieldwork inspect aggregate": true, "fieldwork inspect validate": true,
	"fieldwork dlq show": true, "fieldwork replay": true,
}

// runArgCommands take a replay run id as first argument.
var runArgCommands = map[string]bool{"fieldwork replay resume": true, "fieldwork replay show": true}

// AddDynamicCompletion walks the command tree once and registers completion of topic names,
// consumer names and replay run ids where a connection is configured (flags, environment
// or context). It keeps that knowledge in one place instead of in every command.
func AddDynamicCompletion(f *Factory, root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, name := range topicFlags {
			if c.Flags().Lookup(name) != nil {
				_ = c.RegisterFlagCompletionFunc(name, f.completeTopics)
			}
		}
		for _, name := range consumerFlags {
			if c.Flags().Lookup(name) != nil {
				_ = c.RegisterFlagCompletionFunc(name, f.completeConsumers)
			}
		}
		if c.ValidArgsFunction == nil {
			switch path := c.CommandPath(); {
			case topicArgCommands[path]:
				c.ValidArgsFunction = firstArg(f.completeTopics)
			case runArgCommands[path]:
				c.ValidArgsFunction = firstArg(f.completeRuns)
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
	ctx, cancel := completionContext(c)
	defer cancel()
	saved := f.ConnectTimeout
	f.ConnectTimeout = completionTimeout
	defer func() { f.ConnectTimeout = saved }()
	cl, err := f.Kafka(ctx)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer cl.Close()
	topics, err := cl.TopicNames(ctx, toComplete)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return topics, cobra.ShellCompDirectiveNoFileComp
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

// completeRuns offers the journaled replay runs, newest first, described by status and reason.
func (f *Factory) completeRuns(c *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	return f.completeFromStore(c, func(ctx context.Context, st *dedup.Store) ([]string, error) {
		runs, err := st.ReplayRuns(ctx, dedup.ReplayRunFilter{Limit: 50})
		if err != nil {
			return nil, err
		}
		var out []string
		for _, r := range runs {
			if strings.HasPrefix(r.ID, toComplete) {
				out = append(out, fmt.Sprintf("%s\t%s: %s", r.ID, r.Status, r.Reason))
			}
		}
		return out, nil
	})
}

// completeFromStore offers what list finds in the store, within the completion's time bound;
// nothing when the store cannot be reached or read.
func (f *Factory) completeFromStore(c *cobra.Command, list func(context.Context, *dedup.Store) ([]string, error)) ([]string, cobra.ShellCompDirective) {
	ctx, cancel := completionContext(c)
	defer cancel()
	st, err := f.completionStore(ctx)
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

func (f *Factory) completionStore(ctx context.Context) (*dedup.Store, error) {
	saved := f.ConnectTimeout
	f.ConnectTimeout = completionTimeout
	defer func() { f.ConnectTimeout = saved }()
	return f.Store(ctx)
}
