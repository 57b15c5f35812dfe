package processed

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/wording"
)

// maxListLimit bounds one page, so that a page is always held in memory comfortably; more
// rows are read page by page with --cursor.
const maxListLimit = 100_000

// ProcessedListOptions are the inputs of `processed list`.
type ProcessedListOptions struct {
	cmdutil.StoreDeps
	Filter dedup.ListFilter

	window cmdutil.WindowFlags
	cursor string
	status string
}

// NamedConsumer is --consumer, for cmdutil.RunWith's warning.
func (o *ProcessedListOptions) NamedConsumer() string { return o.Filter.Consumer }

// The values of processed list --status.
const (
	statusProcessed = "processed"
	statusFailed    = "failed"
)

// NewCmdProcessedList builds `processed list`.
func NewCmdProcessedList(f *cmdutil.Factory, runF func(context.Context, *ProcessedListOptions) error) *cobra.Command {
	opts := &ProcessedListOptions{StoreDeps: cmdutil.NewStoreDeps(f)}
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "Markers newest first, filtered by consumer, time and aggregate; paged",
		Long: `List markers newest first (by processed_at, then consumer, then event id), at most --limit
of them. When more follow, the cursor of the next page is printed to stderr as
"next cursor: TOKEN (N markers shown; …)", the token the word after "next cursor:"; run the
same command again with --cursor TOKEN to read it. Keep the other flags the same: a cursor is a position in the order, not a saved query.

--since and --until take an RFC 3339 time, a date (midnight UTC) or a duration meaning that
long ago (2h, 7d), and select processed_at >= since and < until.`,
		Example: `  fieldwork processed list --consumer billing --since 1h
  fieldwork processed list --aggregate task-42 -o json
  fieldwork processed list --limit 1000 --cursor eyJ0Ijoi…`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.parse(cmd, f.Now()); err != nil {
				return err
			}
			return cmdutil.RunWith(cmd, f, cmdutil.NeedStore, opts, runF, processedListRun)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Filter.Consumer, "consumer", "", "only this consumer's markers")
	opts.window.Register(fl, "processed at or after", "processed before")
	fl.StringVar(&opts.Filter.AggregateID, "aggregate", "", "only markers of this aggregate id")
	fl.StringVar(&opts.status, "status", statusProcessed, "processed (the markers) or failed (the failed rows of a table that keeps them: CAP's)")
	_ = cmd.RegisterFlagCompletionFunc("status", cobra.FixedCompletions([]string{statusProcessed, statusFailed}, cobra.ShellCompDirectiveNoFileComp))
	cmdutil.LimitVar(fl, &opts.Filter.Limit, dedup.DefaultListLimit, "markers", maxListLimit, "read on with --cursor")
	fl.StringVar(&opts.cursor, "cursor", "", "continue after the page that printed this cursor")
	return cmd
}

func (opts *ProcessedListOptions) parse(cmd *cobra.Command, now time.Time) error {
	if cmd.Flags().Changed("consumer") {
		if err := cmdutil.CheckConsumer(opts.Filter.Consumer); err != nil {
			return err
		}
	}
	switch opts.status {
	case statusProcessed:
	case statusFailed:
		opts.Filter.Failed = true
	default:
		return fwerr.Usagef("--status %q: want %s or %s", opts.status, statusProcessed, statusFailed)
	}
	var err error
	if opts.Filter.Since, opts.Filter.Until, err = opts.window.Window(now); err != nil {
		return err
	}
	if opts.cursor != "" {
		c, err := decodeCursor(opts.cursor)
		if err != nil {
			return err
		}
		opts.Filter.Before = c
	}
	return nil
}

// cursorJSON is a cursor's content; the token is its JSON in unpadded base64url, opaque to
// the operator and safe in a shell. The time is null after a row without one (another
// library's table may keep none), whose rows List orders last.
type cursorJSON struct {
	ProcessedAt *time.Time `json:"t"`
	Consumer    string     `json:"c"`
	EventID     string     `json:"e"`
}

func encodeCursor(c *dedup.Cursor) string {
	var at *time.Time
	if !c.ProcessedAt.IsZero() {
		t := c.ProcessedAt.UTC()
		at = &t
	}
	b, _ := json.Marshal(cursorJSON{ProcessedAt: at, Consumer: c.Consumer, EventID: c.EventID})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (*dedup.Cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(strings.TrimSpace(s), "="))
	var c cursorJSON
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || (c.ProcessedAt != nil && c.ProcessedAt.IsZero()) || c.Consumer == "" || c.EventID == "" {
		return nil, fwerr.Usagef("--cursor %q is not a cursor printed by fieldwork processed list", s)
	}
	out := &dedup.Cursor{Consumer: c.Consumer, EventID: c.EventID}
	if c.ProcessedAt != nil {
		out.ProcessedAt = *c.ProcessedAt
	}
	return out, nil
}

func processedListRun(ctx context.Context, opts *ProcessedListOptions, cl *cmdutil.Clients) error {
	p, st := cl.Printer, cl.Store
	page, err := st.List(ctx, opts.Filter)
	if err != nil {
		return err
	}
	if err := markerList(p, page.Rows, "no markers match"); err != nil {
		return err
	}
	if page.Next != nil {
		// The token first, so that a script can take it with `next cursor: (\S+)`; on a
		// terminal the explanation goes on the next line (the token alone is as wide as it is).
		sep := " "
		if opts.Streams.ErrTTY {
			sep = "\n"
		}
		fmt.Fprintf(opts.Streams.ErrOut, "next cursor: %s%s(%s shown; more follow: run again with --cursor)\n",
			encodeCursor(page.Next), sep, wording.Plural(int64(len(page.Rows)), "marker"))
	}
	return nil
}
