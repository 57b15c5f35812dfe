// Package docs is `fieldwork docs`: the markdown reference and man pages, generated from the
// command tree.
package docs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/fieldwork/fieldwork/cmd/cmdutil"
)

// DocsOptions are the inputs of `fieldwork docs`.
type DocsOptions struct {
	// Root is the command tree to document.
	Root        *cobra.Command
	MarkdownDir string
	ManDir      string
}

// manDate is the date printed in the man pages' footer. It is fixed so that the generated
// pages only change when the command tree does, and CI can check they are current.
var manDate = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// NewCmdDocs generates the markdown reference and man pages from the command tree.
// runF, when set, replaces the run (for tests of flag parsing).
func NewCmdDocs(f *cmdutil.Factory, runF func(context.Context, *DocsOptions) error) *cobra.Command {
	opts := &DocsOptions{}
	c := &cobra.Command{
		Use:   "docs",
		Short: "Generate the markdown reference and man pages from the command tree",
		Long: `Generates one markdown page and one man page per command from the command tree itself,
so the reference never disagrees with the binary. The checked-in copies live in
docs/reference and docs/man; a test fails when they are out of date (make docs rewrites them).`,
		Example: "  fieldwork docs --markdown-dir docs/reference --man-dir docs/man",
		Args:    cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Root = cmd.Root()
			return cmdutil.Run(cmd, opts, runF, docsRun)
		},
	}
	c.Flags().StringVar(&opts.MarkdownDir, "markdown-dir", "docs/reference", "directory for the markdown pages (\"\" to skip)")
	c.Flags().StringVar(&opts.ManDir, "man-dir", "docs/man", "directory for the man pages (\"\" to skip)")
	return c
}

func docsRun(_ context.Context, opts *DocsOptions) error { return GenerateDocs(opts.Root, opts) }

// GenerateDocs writes the pages for root's tree into the directories of opts, replacing
// whatever pages were there.
func GenerateDocs(root *cobra.Command, opts *DocsOptions) error {
	root.DisableAutoGenTag = true
	// cobra adds the completion command when it executes; add it here too, so that generating
	// from a tree that was never executed (as the docs test does) gives the same pages.
	root.InitDefaultCompletionCmd()
	if opts.MarkdownDir != "" {
		if err := freshDir(opts.MarkdownDir, "*.md"); err != nil {
			return err
		}
		if err := doc.GenMarkdownTree(root, opts.MarkdownDir); err != nil {
			return fmt.Errorf("generate markdown: %w", err)
		}
	}
	if opts.ManDir != "" {
		if err := freshDir(opts.ManDir, "*.1"); err != nil {
			return err
		}
		header := &doc.GenManHeader{Title: "FIELDWORK", Section: "1", Date: &manDate, Source: "fieldwork", Manual: "fieldwork manual"}
		if err := doc.GenManTree(root, header, opts.ManDir); err != nil {
			return fmt.Errorf("generate man pages: %w", err)
		}
	}
	return nil
}

// freshDir creates dir and removes the generated pages left from an older tree.
func freshDir(dir, pattern string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	old, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil {
		return err
	}
	for _, p := range old {
		if err := os.Remove(p); err != nil {
			return err
		}
	}
	return nil
}
