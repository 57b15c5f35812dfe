package cmdutil

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fieldwork/fieldwork/internal/look"
	"github.com/fieldwork/fieldwork/internal/timespec"
)

// OrDash writes an absent value as look.Absent ("-") in a table.
func OrDash(s string) string { return look.OrAbsent(s) }

// FormatTime writes times the same way in every table: UTC, RFC 3339 with milliseconds.
func FormatTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return timespec.FormatTime(t)
}

// OptTime is FormatTime of a time that may be absent ("-").
func OptTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return FormatTime(*t)
}

// JoinInt32 writes partition or broker numbers as "0,1,2".
func JoinInt32(s []int32) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = strconv.Itoa(int(v))
	}
	return strings.Join(parts, ",")
}

// HumanBytes writes 1536 as "1.5 KiB".
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
