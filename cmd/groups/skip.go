package groups

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/action"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/groups"
	"github.com/fieldwork/fieldwork/internal/output"
	"github.com/fieldwork/fieldwork/internal/wording"
)

// GroupsSkipOptions are the inputs of `groups skip`.
type GroupsSkipOptions struct {
	Skip groups.SkipOptions
	// Undo is the skip to undo ("" for a skip).
	Undo string
	cmdutil.ActionFlags
	Now func() time.Time

	toOffset int64
	count    int
}

// NewCmdGroupsSkip builds `groups skip`.
func NewCmdGroupsSkip(f *cmdutil.Factory, runF func(context.Context, *GroupsSkipOptions) error) *cobra.Command {
	opts := &GroupsSkipOptions{ActionFlags: cmdutil.NewActionFlags(f), Now: f.Now}
	cmd := &cobra.Command{
		Use:   "skip GROUP --topic TOPIC --partition N | skip --undo RUN",
		Short: "Park the record a group is stuck on in a dead-letter topic, then commit past it",
		Long: `Unstick a consumer group that keeps failing on one record (a poison message) and does not
dead-letter it itself: any consumer, fieldwork's or not, since the offsets are the broker's.

skip shows the record at the group's committed offset on --topic/--partition, decoded as
inspect record shows it. With --execute it copies that record to the dead-letter topic
(--dlq-topic, default <topic>.dlq) in fieldwork's convention — fw.dlq.reason parked,
fw.dlq.group the group, fw.dlq.error the --reason — waits until the broker acknowledged the
copy, and only then commits the group's offset one past it. The record is never lost: dlq list
shows it, replay sends it back once its consumer is fixed.

--count N parks N offsets from the commit on; --to-offset O and --to-datetime T move the commit to
O, or to the first record at or after T, parking every record in between (the plan says how
many).

It refuses while the group has members, and names them: the broker refuses an operator's
commit for a live group, and a running member would commit over it. Stop the consumers, skip,
start them again. A skip whose group committed in between (the plan is stale) changes nothing.

A dry run by default: without --execute it prints the plan and changes nothing. With
--execute it needs --reason; on a terminal it shows the plan (context, cluster, store, counts,
reason) and asks y/N (a no exits 6); without a terminal it refuses unless --yes. Each executed
skip is journaled in the store (--dsn) with its operator (--operator, $USER or $LOGNAME), the
reason and the old and new offsets: groups journal lists them, and skip --undo RUN commits the
old offsets again (refused when the group has moved on since; the parked copies stay in the
dead-letter topic).

Exit codes: 0 planned or done; 1 refused (the group has members, or moved since the plan) or
failed; 2 a usage error (no --reason, no --yes off a terminal, an offset not past the commit
or beyond the partition); 5 not authorized (named); 6 cancelled at the prompt.`,
		Example: `  fieldwork groups skip task-projection --topic tasks --partition 0
  fieldwork groups skip task-projection --topic tasks --partition 0 --execute --reason "INC-7: unparseable amount"
  fieldwork groups skip task-projection --topic tasks --partition 0 --count 5 --execute --yes --reason "INC-7"
  fieldwork groups skip task-projection --topic tasks --partition 0 --to-datetime 2h
  fieldwork groups skip --undo 20261201-101500-3f9a1c --execute --yes --reason "wrong group"`,
		Args: cmdutil.MaxArgs(1, "one consumer group"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.parse(cmd, args); err != nil {
				return err
			}
			return cmdutil.RunWith(cmd, f, actionNeed(opts.ActionFlags, opts.Undo), opts, runF, groupsSkipRun)
		},
	}
	fl := cmd.Flags()
	cmdutil.TopicVar(fl, &opts.Skip.Topic, "topic", "the topic the group is stuck on (required)")
	fl.Int32Var(&opts.Skip.Partition, "partition", 0, "the partition the group is stuck on (required)")
	cmdutil.CountVar(fl, &opts.count, "count", 1, "park this many offsets from the group's commit on")
	fl.Int64Var(&opts.toOffset, "to-offset", 0, "move the commit to this offset, parking every record before it")
	toDatetimeVar(cmd, &opts.Skip.ToTime, func() time.Time { return opts.Now() }, "move the commit to the first record at or after this time, parking every record before it")
	cmdutil.TopicVar(fl, &opts.Skip.DeadLetterTopic, "dlq-topic", "the dead-letter topic the parked records go to (default <topic>.dlq)")
	fl.StringVar(&opts.Undo, "undo", "", "restore the offsets a journaled skip moved (its run id, from groups journal)")
	opts.ActionFlags.Register(fl, "park the records and move the offsets",
		"why you skip: required with --execute, shown in the confirmation, journaled and written as the parked records' fw.dlq.error", "who skips")
	return cmd
}

func (opts *GroupsSkipOptions) parse(cmd *cobra.Command, args []string) error {
	fl := cmd.Flags()
	if opts.Undo != "" {
		for _, n := range []string{"topic", "partition", "count", "to-offset", "to-datetime", "dlq-topic"} {
			if fl.Changed(n) {
				return fwerr.Usagef("--undo restores what the journal says the skip moved: --%s does not go with it", n)
			}
		}
		if len(args) > 0 {
			return fwerr.Usagef("--undo names the skip, which names its group: drop the argument %q", args[0])
		}
		return opts.RequireReason("it is journaled with the undo")
	}
	if len(args) == 0 {
		return fwerr.Usagef("name the consumer group: groups skip GROUP --topic TOPIC --partition N")
	}
	opts.Skip.Group = args[0]
	if err := cmdutil.CheckGroup(opts.Skip.Group); err != nil {
		return err
	}
	if !fl.Changed("topic") || !fl.Changed("partition") {
		return fwerr.Usagef("--topic and --partition are required: the partition the group is stuck on (groups describe %s shows it)", opts.Skip.Group)
	}
	if opts.Skip.Partition < 0 {
		return fwerr.Usagef("--partition %d: must be 0 or more", opts.Skip.Partition)
	}
	given := 0
	for _, n := range []string{"count", "to-offset", "to-datetime"} {
		if fl.Changed(n) {
			given++
		}
	}
	if given > 1 {
		return fwerr.Usagef("--count, --to-offset and --to-datetime each say where the commit goes: give one")
	}
	opts.Skip.Count = int64(opts.count)
	if fl.Changed("to-offset") {
		if opts.toOffset < 0 {
			return fwerr.Usagef("--to-offset %d: must be 0 or more", opts.toOffset)
		}
		opts.Skip.ToOffset = &opts.toOffset
	}
	return opts.RequireReason("it is journaled with the skip and written as the parked records' fw.dlq.error")
}

func groupsSkipRun(ctx context.Context, opts *GroupsSkipOptions, cl *cmdutil.Clients) error {
	if opts.Undo != "" {
		return groupsUndoRun(ctx, opts.ActionFlags, opts.Undo, cl)
	}
	p := cl.Printer
	opts.Skip.Schemas = cl.Schemas
	out, err := cmdutil.RunAction(ctx, cl, opts.ActionFlags, groups.Skip(cl.Kafka, cl.Store, opts.Skip), cmdutil.ActionView[*groups.SkipPlan]{
		Prompt: func(plan *groups.SkipPlan) cmdutil.Prompt {
			return cmdutil.Prompt{Kafka: true, Store: cl.Store.Table(),
				Question: fmt.Sprintf("park %s of %s/%d in %s and move consumer group %s from offset %d to %d",
					wording.Plural(plan.Offsets, "record"), plan.Topic, plan.Partition, plan.DeadLetterTopic, plan.Group, plan.Committed, plan.NewOffset),
				Counts: []string{fmt.Sprintf("%s to %s", wording.Plural(plan.Offsets, "offset"), plan.DeadLetterTopic),
					fmt.Sprintf("group %s on %s/%d: %d → %d", plan.Group, plan.Topic, plan.Partition, plan.Committed, plan.NewOffset)}}
		},
		Show: func(plan *groups.SkipPlan) error { return showPlan(cl, plan, skipPlanSections(p, plan, false)) },
	})
	return render(cl, opts.Execute, out, err, func(plan *groups.SkipPlan, dry bool) []output.Section { return skipPlanSections(p, plan, dry) },
		func(res *groups.SkipResult) []output.Section { return skipResultSections(p, res) },
		func(plan *groups.SkipPlan) string {
			return fmt.Sprintf("consumer group %s is at offset %d of %s/%d already; nothing was parked, committed or journaled",
				plan.Group, plan.Committed, plan.Topic, plan.Partition)
		})
}

// groupsUndoRun undoes the journaled skip or reset id: groups skip --undo, groups reset --undo.
func groupsUndoRun(ctx context.Context, flags cmdutil.ActionFlags, id string, cl *cmdutil.Clients) error {
	p, st := cl.Printer, cl.Store
	out, err := cmdutil.RunAction(ctx, cl, flags, groups.Undo(cl.Kafka, st, id), cmdutil.ActionView[*groups.UndoPlan]{
		Prompt: func(plan *groups.UndoPlan) cmdutil.Prompt {
			a := plan.Undone
			q := fmt.Sprintf("move consumer group %s on %s back to where %s %s found it", a.Group, a.Topic, a.Action, a.ID)
			if a.Action == dedup.ActionSkip {
				q += " (it reads the parked records again)"
			}
			pr := cmdutil.Prompt{Kafka: true, Store: st.Table(), Question: q}
			for _, m := range plan.Moves {
				pr.Counts = append(pr.Counts, fmt.Sprintf("group %s on %s", a.Group, moveText(a.Topic, m)))
			}
			return pr
		},
		Show: func(plan *groups.UndoPlan) error { return showPlan(cl, plan, undoPlanSections(p, plan, false)) },
	})
	return render(cl, flags.Execute, out, err, func(plan *groups.UndoPlan, dry bool) []output.Section { return undoPlanSections(p, plan, dry) },
		func(res *groups.UndoResult) []output.Section { return undoResultSections(p, res) }, nil)
}

// showPlan prints an executed plan on a terminal before its question.
func showPlan(cl *cmdutil.Clients, plan any, secs []output.Section) error {
	if err := cl.Printer.Object(plan, secs); err != nil {
		return err
	}
	fmt.Fprintln(cl.Streams.ErrOut)
	return nil
}

// render prints what an action of groups did: the plan of a dry run, or of a plan refused
// (with its refusal); the plan, after the note nothing says, of an executed one whose checks
// found nothing to do (nothing asked, changed or journaled; nil for an action whose checks
// never do); the result of an executed one.
func render[P comparable, R any](cl *cmdutil.Clients, execute bool, out action.Outcome[P, R], err error,
	plan func(P, bool) []output.Section, result func(R) []output.Section, nothing func(P) string) error {
	var none P
	switch {
	case out.Stage == action.StagePlan && out.Plan != none:
		if perr := cl.Printer.Object(out.Plan, plan(out.Plan, !execute)); perr != nil {
			return perr
		}
		return err
	case err == nil && out.Stage == action.StageCheck && nothing != nil:
		cmdutil.Note(cl.Streams, "nothing to do: "+nothing(out.Plan))
		return cl.Printer.Object(out.Plan, plan(out.Plan, false))
	case err != nil || out.Stage != action.StageExecute:
		return err
	}
	return cl.Printer.Object(out.Result, result(out.Result))
}
