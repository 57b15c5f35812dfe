package inspect

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/gcpace"
	"github.com/fieldwork/fieldwork/internal/inspect"
	"github.com/fieldwork/fieldwork/internal/output"
)

// InspectValidateOptions are the inputs of `inspect validate`.
type InspectValidateOptions struct {
	topicScan
	MaxExamples   int
	MemoryEntries int
	TempDir       string
}

// NewCmdInspectValidate builds `inspect validate T`.
func NewCmdInspectValidate(f *cmdutil.Factory, runF func(context.Context, *InspectValidateOptions) error) *cobra.Command {
	opts := &InspectValidateOptions{}
	var kinds []string
	for _, k := range inspect.FindingKinds {
		kinds = append(kinds, fmt.Sprintf("  %-22s %s", k.Kind, k.Description))
	}
	cmd := &cobra.Command{
		Use:   "validate TOPIC",
		Short: "Lint an event stream; exit 3 when it finds problems",
		Long: `Read the topic (or the selected partitions, offsets or times, fixed when the scan starts)
and report what would hurt an idempotent consumer:

` + strings.Join(kinds, "\n") + `

Every finding is counted; up to --max-examples of each kind are shown with their partition and
offset. Redeliveries (the same event id with the same payload) are ordinary under
at-least-once delivery and only counted. Exit code 0 when the stream is clean, 3 when there are
problems.

Memory stays bounded: only fixed-size fingerprints of event ids and aggregates are kept, at most
--memory-entries of each in memory, the rest in a temporary SQLite file under --temp-dir that
is removed at the end.`,
		Example: `  fieldwork inspect validate tasks
  fieldwork inspect validate tasks --partition 0 --start-offset 10 --end-offset 50
  fieldwork inspect validate tasks --since 2h -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.parseSelection(cmd, f.Now()); err != nil {
				return err
			}
			return cmdutil.RunWith(cmd, f, cmdutil.NeedKafka, opts, runF, inspectValidateRun)
		},
	}
	opts.sel.Register(cmd)
	cmdutil.TopicArg(cmd, &opts.Topic, "topic to lint")
	fl := cmd.Flags()
	cmdutil.CountVar(fl, &opts.MaxExamples, "max-examples", inspect.DefaultMaxExamples, "findings shown per kind (all are counted)")
	cmdutil.CountVar(fl, &opts.MemoryEntries, "memory-entries", inspect.DefaultMemoryEntries, "fingerprints kept in memory per table before spilling to disk (~50 bytes each)")
	fl.StringVar(&opts.TempDir, "temp-dir", "", "where the temporary spill files are made (default the system's)")
	return cmd
}

func inspectValidateRun(ctx context.Context, opts *InspectValidateOptions, cl *cmdutil.Clients) error {
	gcpace.Floor(os.Getenv, gcpace.ReadFloor)
	p, c := cl.Printer, cl.Kafka
	progress := output.NewProgress(cl.Streams, output.ProgressOptions{Label: "validating " + opts.Topic})
	rep, err := inspect.Validate(ctx, c, opts.Topic, opts.Selection, inspect.ValidateOptions{Schemas: cl.Schemas,
		MaxExamples: opts.MaxExamples, MemoryEntries: opts.MemoryEntries, TempDir: opts.TempDir, Progress: progress.Update,
	})
	progress.Stop()
	if err != nil {
		return err
	}
	if p.Format == output.FormatCSV {
		err = output.List(p, rep.Findings, findingColumns, "")
	} else {
		err = p.Object(rep, validateSections(p, rep))
	}
	if err != nil {
		return err
	}
	return rep.Result()
}
