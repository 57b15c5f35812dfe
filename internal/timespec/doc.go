// Package timespec is the one reader and writer of the times and durations an operator types:
// every flag that takes a duration (--older-than, --window) or a time (--since, --until)
// parses through it, and every duration fieldwork shows is written by Format, so that
// `dlq stats --window 7d`, `processed prune --older-than 7d` and `dlq list --since 7d` all
// mean the same thing and help prints `1d` wherever it means a day.
//
// Durations are Go's (ns, us or µs, ms, s, m, h, with decimal fractions: 90m, 1.5h) plus
// days (d, 24h) and weeks (w, 7d), in any combination: 7d, 2w, 1d12h, 1w2d. A day is always
// 24 hours: no calendar or daylight-saving arithmetic. Negative durations are refused; what
// Go's time.ParseDuration accepts without a sign it reads to the same value.
//
// Times are one of:
//   - an RFC 3339 time, with a zone or Z: 2026-12-01T15:04:05Z, 2026-12-01T15:04:05.5+02:00;
//   - a date, 2026-12-01, meaning midnight UTC at the start of that day (not local midnight:
//     the same command gives the same answer on every machine);
//   - a duration, meaning that long before now: 2h is two hours ago, 7d a week ago.
//
// Every error is a usage error (fwerr.KindUsage, exit 2) that says what is wrong with the
// text and what would be accepted.
package timespec
