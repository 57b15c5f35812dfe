package groups

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/groups"
	"github.com/fieldwork/fieldwork/internal/output"
	"github.com/fieldwork/fieldwork/internal/wording"
)

// GroupsResetOptions are the inputs of `groups reset`.
type GroupsResetOptions struct {
	Reset groups.ResetOptions
	// Undo is the skip or reset to undo ("" for a reset).
	Undo string
	cmdutil.ActionFlags
	Now func() time.Time

	toEarliest, toLatest bool
	toOffset, shiftBy    int64
	toTime               time.Time
}

// resetTargets are the flags that say where a reset moves the commits, one of which is given.
var resetTargets = []string{"to-earliest", "to-latest", "to-offset", "to-datetime", "shift-by"}

// NewCmdGroupsReset builds `groups reset`.
func NewCmdGroupsReset(f *cmdutil.Factory, runF func(context.Context, *GroupsResetOptions) error) *cobra.Command {
	opts := &GroupsResetOptions{ActionFlags: cmdutil.NewActionFlags(f), Now: f.Now}
	cmd := &cobra.Command{
		Use:   "reset GROUP (--to-earliest | --to-latest | --to-offset N | --to-datetime T | --shift-by ±N) | reset --undo RUN",
		Short: "Move a group's committed offsets back (or on) to a target, as kafka-consumer-groups --reset-offsets does",
		Long: `Rewind a consumer group to read again (after a bug fix, a lost projection), or move it on,
as kafka-consumer-groups --reset-offsets does: any consumer, fieldwork's or not, since the
offsets are the broker's. Nothing is parked: the records between the old and the new commit
are read again (rewound) or never read (moved on); groups skip parks what it steps over.

One target: --to-earliest (each partition's log start), --to-latest (its log end),
--to-offset N, --to-datetime T (the first record at or after T: RFC 3339, a date, or a
duration ago such as 2h), --shift-by ±N (the commit plus N; -N rewinds). A target outside a
partition is clamped to its log start or log end, and the plan says which were.

Scope: --topic T (repeatable) resets every partition of T, or those --partition names; without
--topic, every partition the group has a commit on.

It refuses while the group has members, and names them: the broker refuses an operator's
commit for a live group, and a running member would commit over it. Stop the consumers,
reset, start them again. A reset whose group committed in between (the plan is stale)
changes nothing.

A dry run by default: without --execute it prints the plan — per partition the committed
offset, the new one, the difference and whether it was clamped — and changes nothing. A plan
that moves no commit (the group is there already) does nothing, executed or not. With
--execute it needs --reason; on a terminal it shows the plan and asks y/N (a no exits 6);
without a terminal it refuses unless --yes. Each executed reset is journaled in the store
(--dsn) with its operator (--operator, $USER or $LOGNAME), the reason and each partition's old
and new offset: groups journal lists them, and reset --undo RUN commits the old offsets again
(removing a commit the reset made where there was none; refused when the group has moved on
since).

Exit codes: 0 planned or done; 1 refused (the group has members, or moved since the plan) or
failed; 2 a usage error (no target or two, a negative --to-offset, no --reason, no --yes off
a terminal); a group, topic or partition that does not exist exits as in every command; 5 not
authorized (named); 6 cancelled at the prompt.`,
		Example: `  fieldwork groups reset task-projection --topic tasks --to-earliest
  fieldwork groups reset task-projection --topic tasks --to-datetime 2h
  fieldwork groups reset task-projection --topic tasks --partition 0,2 --shift-by -100
  fieldwork groups reset task-projection --to-datetime 2026-12-01T10:00:00Z --execute --reason "INC-9: replay the projection"
  fieldwork groups reset --undo 20261201-101500-3f9a1c --execute --yes --reason "wrong group"`,
		Args: cmdutil.MaxArgs(1, "one consumer group"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.parse(cmd, args); err != nil {
				return err
			}
			return cmdutil.RunWith(cmd, f, actionNeed(opts.ActionFlags, opts.Undo), opts, runF, groupsResetRun)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&opts.toEarliest, "to-earliest", false, "move each commit to its partition's log start")
	fl.BoolVar(&opts.toLatest, "to-latest", false, "move each commit to its partition's log end")
	fl.Int64Var(&opts.toOffset, "to-offset", 0, "move each commit to this offset")
	toDatetimeVar(cmd, &opts.toTime, func() time.Time { return opts.Now() }, "move each commit to the first record at or after this time")
	fl.Int64Var(&opts.shiftBy, "shift-by", 0, "move each commit by this many offsets (negative: back)")
	cmdutil.TopicsVar(fl, &opts.Reset.Topics, "topic", "reset the group's commits on this topic (repeatable; default every topic it has commits on)", false)
	fl.Int32SliceVar(&opts.Reset.Partitions, "partition", nil, "reset only partition `N` of the --topic (repeatable, or comma-separated; default all)")
	fl.Lookup("partition").DefValue = ""
	fl.StringVar(&opts.Undo, "undo", "", "restore the offsets a journaled reset moved (its run id, from groups journal)")
	opts.ActionFlags.Register(fl, "move the offsets",
		"why you reset: required with --execute, shown in the confirmation and journaled", "who resets")
	return cmd
}

func (opts *GroupsResetOptions) parse(cmd *cobra.Command, args []string) error {
	fl := cmd.Flags()
	if opts.Undo != "" {
		for _, n := range append([]string{"topic", "partition"}, resetTargets...) {
			if fl.Changed(n) {
				return fwerr.Usagef("--undo restores what the journal says the reset moved: --%s does not go with it", n)
			}
		}
		if len(args) > 0 {
			return fwerr.Usagef("--undo names the reset, which names its group: drop the argument %q", args[0])
		}
		return opts.RequireReason("it is journaled with the undo")
	}
	if len(args) == 0 {
		return fwerr.Usagef("name the consumer group: groups reset GROUP --to-earliest (or another target)")
	}
	opts.Reset.Group = args[0]
	if err := cmdutil.CheckGroup(opts.Reset.Group); err != nil {
		return err
	}
	var given []string
	for _, n := range resetTargets {
		if fl.Changed(n) {
			given = append(given, "--"+n)
		}
	}
	if len(given) != 1 {
		return fwerr.Usagef("say where the commits go with one of --to-earliest, --to-latest, --to-offset N, --to-datetime T, --shift-by ±N (got %s)", cmp.Or(strings.Join(given, " and "), "none"))
	}
	if len(opts.Reset.Partitions) > 0 && len(opts.Reset.Topics) != 1 {
		return fwerr.Usagef("--partition names partitions of one --topic: give exactly one --topic with it")
	}
	for _, p := range opts.Reset.Partitions {
		if p < 0 {
			return fwerr.Usagef("--partition %d: partitions are numbered from 0", p)
		}
	}
	t := &opts.Reset.Target
	switch given[0] {
	case "--to-earliest":
		t.To = groups.ResetEarliest
	case "--to-latest":
		t.To = groups.ResetLatest
	case "--to-offset":
		t.To, t.Offset = groups.ResetOffset, &opts.toOffset
		if opts.toOffset < 0 {
			return fwerr.Usagef("--to-offset %d: offsets are not negative (--shift-by moves back from the commit)", opts.toOffset)
		}
	case "--to-datetime":
		t.To, t.Time = groups.ResetDatetime, &opts.toTime
	case "--shift-by":
		t.To, t.Shift = groups.ResetShift, &opts.shiftBy
	}
	if given[0] == "--to-earliest" && !opts.toEarliest || given[0] == "--to-latest" && !opts.toLatest {
		return fwerr.Usagef("%s=false: give the one target you mean", given[0])
	}
	return opts.RequireReason("it is journaled with the reset")
}

func groupsResetRun(ctx context.Context, opts *GroupsResetOptions, cl *cmdutil.Clients) error {
	if opts.Undo != "" {
		return groupsUndoRun(ctx, opts.ActionFlags, opts.Undo, cl)
	}
	p := cl.Printer
	out, err := cmdutil.RunAction(ctx, cl, opts.ActionFlags, groups.Reset(cl.Kafka, cl.Store, opts.Reset), cmdutil.ActionView[*groups.ResetPlan]{
		Prompt: func(plan *groups.ResetPlan) cmdutil.Prompt {
			pr := cmdutil.Prompt{Kafka: true, Store: cl.Store.Table(),
				Question: fmt.Sprintf("move %s %s %s on %s", groupNoun(plan.Type), plan.Group, targetText(plan.Target),
					wording.Plural(int64(plan.Changes), "partition"))}
			for _, rp := range plan.Partitions {
				if rp.Moves() {
					pr.Counts = append(pr.Counts, fmt.Sprintf("group %s on %s/%d: %s → %d", plan.Group, rp.Topic, rp.Partition, groups.OffsetText(rp.Committed), rp.NewOffset))
				}
			}
			return pr
		},
		Show: func(plan *groups.ResetPlan) error { return showPlan(cl, plan, resetPlanSections(p, plan, false)) },
	})
	return render(cl, opts.Execute, out, err, func(plan *groups.ResetPlan, dry bool) []output.Section { return resetPlanSections(p, plan, dry) },
		func(res *groups.ResetResult) []output.Section { return resetResultSections(p, res) },
		func(plan *groups.ResetPlan) string {
			return fmt.Sprintf("consumer group %s is at the plan's offsets already; nothing was committed or journaled", plan.Group)
		})
}

// groupNoun is how a group of type groupType is named in a question.
func groupNoun(groupType string) string {
	if groupType == groups.TypeShare {
		return "the start offsets of share group"
	}
	return "consumer group"
}
