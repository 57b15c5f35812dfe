package groups

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/groups"
	"github.com/fieldwork/fieldwork/internal/output"
)

// GroupsCheckOptions are the inputs of `groups check`.
type GroupsCheckOptions struct {
	Groups []string
}

// NewCmdGroupsCheck builds `groups check [GROUP...]`.
func NewCmdGroupsCheck(f *cmdutil.Factory, runF func(context.Context, *GroupsCheckOptions) error) *cobra.Command {
	opts := &GroupsCheckOptions{}
	return &cobra.Command{
		Use:   "check [GROUP...]",
		Short: "Whether a share group's rejected records reach its dead-letter topic or are archived and lost",
		Long: `Check where a share group's rejected records go (a member rejects a record, or a record
reaches the delivery count limit): the broker writes a dead letter (KIP-1191) only when every
rule holds, and otherwise archives the record with nothing a client can see. The rules, each
reported with what it found:

  share_version      the cluster's share.version is 2 or more (below: no dead letters)
  dlq_topic_set      the group sets errors.deadletterqueue.topic.name
  dlq_prefix         the name starts with the cluster's errors.deadletterqueue.topic.name.prefix
  dlq_topic_exists   the topic exists, or errors.deadletterqueue.auto.create.topics.enable
  dlq_topic_enabled  the topic carries errors.deadletterqueue.group.enable=true
  dlq_copy           errors.deadletterqueue.copy.record.enable: off, a dead letter is the
                     record's coordinates only (a warning)
  dlq_record_size    with copy on, the DLQ topic's max.message.bytes is no smaller than the
                     source topics': a larger batch's dead letters lose key and value (a warning)

Without GROUP, every share group of the cluster. A group that has not run yet is checked on
its configuration. groups describe of a share group shows the same check.

Exit codes: 0 every rejected record reaches a DLQ (warnings included); 3 some group's rejected
records would be archived and lost; 2 a group named is not a share group.`,
		Example: `  fieldwork groups check billing-workers
  fieldwork groups check -o json | jq '.[] | select(.lost) | .group'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Groups = args
			return cmdutil.RunWith(cmd, f, cmdutil.NeedKafka, opts, runF, groupsCheckRun)
		},
	}
}

func groupsCheckRun(ctx context.Context, opts *GroupsCheckOptions, cl *cmdutil.Clients) error {
	p := cl.Printer
	paths, err := groups.CheckShareGroups(ctx, cl.Kafka, opts.Groups)
	if err != nil {
		return err
	}
	var sections []output.Section
	for _, dl := range paths {
		sections = append(sections, deadLetterSections(p, dl)...)
	}
	if len(paths) == 0 {
		sections = append(sections, output.Section{Title: "Share groups", Text: "no share groups"})
	}
	if err := p.Object(paths, sections); err != nil {
		return err
	}
	return groups.CheckResult(paths)
}
