package output

import (
	"fmt"
	"strings"
)

// Format is an output format chosen with -o.
type Format string

const (
	FormatTable Format = "table"
	FormatJSON  Format = "json"
	FormatJSONL Format = "jsonl"
	FormatCSV   Format = "csv"
)

// Formats lists the accepted values of -o, for help texts and completion.
var Formats = []string{string(FormatTable), string(FormatJSON), string(FormatJSONL), string(FormatCSV)}

// ParseFormat turns the -o value into a Format. An empty value picks the default: a table on
// a terminal, JSON Lines when stdout is piped.
func ParseFormat(value string, outTTY bool) (Format, error) {
	switch strings.ToLower(strings.TrimSpace(value)) {
	case "":
		if outTTY {
			return FormatTable, nil
		}
		return FormatJSONL, nil
	case "table":
		return FormatTable, nil
	case "json":
		return FormatJSON, nil
	case "jsonl", "ndjson":
		return FormatJSONL, nil
	case "csv":
		return FormatCSV, nil
	}
	return "", fmt.Errorf("unknown output format %q (want one of %s)", value, strings.Join(Formats, ", "))
}
