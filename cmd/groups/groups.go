// Package groups is the groups command group: consumer groups, their lag and whether they
// move, and moving a stuck group past a poison record.
package groups

import (
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/timespec"
)

// groupsLong is the group's help.
const groupsLong = `Consumer groups: which exist, how far behind they are, whether their commits move, and
how to move a group that is stuck on a poison record past it without losing the record.

  groups list                          every group (classic, consumer, share): state, members,
                                       topics, total lag
  groups describe G                    members, assignments, committed offsets, log end, lag,
                                       and which commits moved between two reads (--watch); a
                                       share group: start offsets, lag, its dead-letter path
  groups check [G...]                  whether a share group's rejected records reach its
                                       dead-letter topic or are lost (exit 3)
  groups skip G --topic T --partition P
                                       park the record the group is stuck on in a dead-letter
                                       topic, then commit past it; --undo RUN restores
  groups reset G --to-datetime T       move the group's commits back (or on) to a target:
                                       --to-earliest, --to-latest, --to-offset, --to-datetime,
                                       --shift-by; --undo RUN restores
  groups journal                       the executed skips, resets and undos: who, why, which
                                       offsets

These work for any consumer, not only fieldwork's: lag and commits are the broker's. A share
group (KIP-932) has start offsets instead of commits: reset moves them, skip refuses it.
skip and reset are dry runs unless --execute, ask on a terminal (--yes in scripts), need
--reason, refuse while the group has members, and are journaled in the store (--dsn) with
the old and new offsets.`

// NewCmdGroups is the groups group.
func NewCmdGroups(f *cmdutil.Factory) *cobra.Command {
	// The store-naming flags are this command's: bound here, read by the store its commands open.
	naming := new(dedup.Options)
	f = f.WithStoreNaming(naming)
	cmd := cmdutil.NewGroup("groups <command>", "Consumer groups: lag, stuck commits, skipping a poison record, resetting offsets", groupsLong,
		NewCmdGroupsList(f, nil),
		NewCmdGroupsDescribe(f, nil),
		NewCmdGroupsCheck(f, nil),
		NewCmdGroupsSkip(f, nil),
		NewCmdGroupsReset(f, nil),
		NewCmdGroupsJournal(f, nil),
	)
	cmdutil.RegisterStoreFlags(cmd, cmd.PersistentFlags(), naming)
	return cmd
}

// actionNeed is what a groups action (skip, reset) opens: the cluster, and the journal when it
// is executed or undoes one (a dry run reads no store).
func actionNeed(flags cmdutil.ActionFlags, undo string) cmdutil.Need {
	need := cmdutil.NeedKafka
	if flags.Execute || undo != "" {
		need |= cmdutil.NeedJournal
	}
	return need
}

// toDatetimeVar defines --to-datetime, the time skip and reset move a commit to (the first
// record at or after it), under Kafka's own name for it (kafka-consumer-groups
// --to-datetime); --to-time, skip's name for it before, is the same flag in both.
func toDatetimeVar(cmd *cobra.Command, p *time.Time, now func() time.Time, usage string) {
	fl := cmd.Flags()
	fl.Var(timespec.NewTimeValue(p, now), "to-datetime", usage+": "+cmdutil.TimeHelp)
	fl.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if name == "to-time" {
			name = "to-datetime"
		}
		return pflag.NormalizedName(name)
	})
}
