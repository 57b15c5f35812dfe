// Package wording is how counts are said in every message, plan and summary, domain and
// command layer alike: "1 record", "2 records".
package wording

import "strconv"

// Plural says n of a noun whose plural adds an s: "1 problem", "2 problems", "0 problems".
func Plural(n int64, noun string) string { return Count(n, noun, noun+"s") }

// Count says n with the singular one or the plural many: "1 duplicate was", "2 duplicates
// were".
func Count(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.FormatInt(n, 10) + " " + many
}
