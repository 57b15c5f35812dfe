package processed

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/output"
	"github.com/fieldwork/fieldwork/internal/timespec"
)

// ProcessedStatsOptions are the inputs of `processed stats`.
type ProcessedStatsOptions struct {
	cmdutil.StoreDeps
	Filter dedup.StatsFilter
}

// NewCmdProcessedStats builds `processed stats`.
func NewCmdProcessedStats(f *cmdutil.Factory, runF func(context.Context, *ProcessedStatsOptions) error) *cobra.Command {
	opts := &ProcessedStatsOptions{StoreDeps: cmdutil.NewStoreDeps(f)}
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Per consumer: markers, first and last processed, markers per hour; table size",
		Long: `For every consumer (or --consumer): how many markers it has, when the first and the last
were processed, and how many it wrote per hour over --window (ending now). On PostgreSQL
also the marker table's size on disk: table, indexes and total.

It reads the whole table (or the consumer's part of it): on a large table it takes a while.`,
		Example: `  fieldwork processed stats
  fieldwork processed stats --consumer billing --window 1h -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("consumer") {
				if err := cmdutil.CheckConsumer(opts.Filter.Consumer); err != nil {
					return err
				}
			}
			return cmdutil.RunWith(cmd, f, cmdutil.NeedStore, opts, runF, processedStatsRun)
		},
	}
	cmd.Flags().StringVar(&opts.Filter.Consumer, "consumer", "", "only this consumer")
	cmd.Flags().Var(timespec.NewDurationValue(&opts.Filter.Window, dedup.DefaultStatsWindow), "window", "span ending now over which markers per hour are counted: 90m, 1d, 2w")
	return cmd
}

// statsReport is what `processed stats` prints.
type statsReport struct {
	Driver        string                `json:"driver"`
	Table         string                `json:"table"`
	Window        string                `json:"window"`
	WindowSeconds int64                 `json:"window_seconds"`
	Consumers     []dedup.ConsumerStats `json:"consumers"`
	// Sizes is null on SQLite.
	Sizes *dedup.Sizes `json:"sizes"`
}

func processedStatsRun(ctx context.Context, opts *ProcessedStatsOptions, cl *cmdutil.Clients) error {
	p, st := cl.Printer, cl.Store
	s, err := st.Stats(ctx, opts.Filter)
	if err != nil {
		return err
	}
	rep := statsReport{Driver: st.Driver(), Table: st.Table(), Window: timespec.Format(s.Window),
		WindowSeconds: int64(s.Window / time.Second), Consumers: s.Consumers, Sizes: s.Sizes}
	if rep.Consumers == nil {
		rep.Consumers = []dedup.ConsumerStats{}
	}
	if p.Format == output.FormatCSV {
		return output.List(p, rep.Consumers, statsColumns(), "")
	}
	return p.Object(rep, statsSections(p, rep))
}

func statsColumns() []output.Column[dedup.ConsumerStats] {
	return []output.Column[dedup.ConsumerStats]{
		{Name: "consumer", Value: func(c dedup.ConsumerStats) string { return c.Consumer }},
		{Name: "markers", Value: func(c dedup.ConsumerStats) string { return strconv.FormatInt(c.Count, 10) }},
		{Name: "first_processed_at", Value: func(c dedup.ConsumerStats) string { return cmdutil.FormatTime(c.First) }},
		{Name: "last_processed_at", Value: func(c dedup.ConsumerStats) string { return cmdutil.FormatTime(c.Last) }},
		{Name: "in_window", Value: func(c dedup.ConsumerStats) string { return strconv.FormatInt(c.InWindow, 10) }},
		{Name: "per_hour", Value: func(c dedup.ConsumerStats) string { return strconv.FormatFloat(c.PerHour, 'f', 1, 64) }},
	}
}

func statsSections(p *output.Printer, rep statsReport) []output.Section {
	cols := statsColumns()
	s := output.Section{Title: fmt.Sprintf("Markers in %s (%s); window: the last %s", rep.Table, rep.Driver, rep.Window)}
	for _, c := range cols {
		s.Header = append(s.Header, c.Name)
	}
	var total int64
	for _, c := range rep.Consumers {
		row := make([]string, len(cols))
		for i, col := range cols {
			row[i] = col.Value(c)
		}
		s.Rows = append(s.Rows, row)
		total += c.Count
	}
	sections := []output.Section{s}
	sum := output.Section{Title: "Totals", Fields: [][2]string{
		{"consumers", strconv.Itoa(len(rep.Consumers))},
		{"markers", strconv.FormatInt(total, 10)},
	}}
	if z := rep.Sizes; z != nil {
		sum.Fields = append(sum.Fields,
			[2]string{"table size", cmdutil.HumanBytes(z.TableBytes)},
			[2]string{"index size", cmdutil.HumanBytes(z.IndexBytes)},
			[2]string{"total size", cmdutil.HumanBytes(z.TotalBytes)})
	} else {
		sum.Fields = append(sum.Fields, [2]string{"size", p.Styles.Dim.Render("not reported on " + rep.Driver)})
	}
	return append(sections, sum)
}
