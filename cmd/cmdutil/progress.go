package cmdutil

import (
	"github.com/fieldwork/fieldwork/internal/inspect"
	"github.com/fieldwork/fieldwork/internal/output"
)

// ScanProgress is an output.Progress line for a scan of records, in the shape of the
// callback a scan takes and the function that ends the line, for the commands that still
// take it so (replay's plan). The others call output.NewProgress themselves.
func ScanProgress(s *output.Streams, label string) (inspect.ProgressFunc, func()) {
	p := output.NewProgress(s, output.ProgressOptions{Label: label})
	return p.Update, p.Stop
}
