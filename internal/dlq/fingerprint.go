package dlq

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
)

// A fingerprint names a failure's cause: the dead letter's error class plus its error message
// with what differs from one occurrence of the same failure to the next normalised away — the
// quoted values, the UUIDs, the long hexadecimal ids, the record addresses and every other
// number (docs/design.md §3.2). Dead letters that differ only in such ids share one
// fingerprint, so `dlq stats --group-by fingerprint` counts failures by cause and
// `--fingerprint F` selects one cause in dlq and replay alike.

// fingerprintLen is how many hexadecimal digits of the digest a fingerprint keeps.
const fingerprintLen = 12

// The normalisations, in the order they apply: a quoted value first (it may hold anything,
// ids and numbers included), then UUIDs and long hexadecimal runs (before the numbers they
// contain), then record addresses and numbers.
var (
	fpQuoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	fpUUID   = regexp.MustCompile(`(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
	fpHex    = regexp.MustCompile(`(?i)\b(?:0x)?[0-9a-f]{8,}\b`)
	fpNumber = regexp.MustCompile(`[0-9]+(?:\.[0-9]+)?`)
	fpSpace  = regexp.MustCompile(`\s+`)
)

// NormaliseError is the message part of a fingerprint: msg with quoted values replaced by
// <q>, UUIDs by <uuid>, hexadecimal ids of 8 digits or more by <hex>, and every other number
// (a record address's partition and offset, a count, a version) by <n>; runs of white space
// become one space.
func NormaliseError(msg string) string {
	s := fpQuoted.ReplaceAllString(msg, "<q>")
	s = fpUUID.ReplaceAllString(s, "<uuid>")
	s = fpHex.ReplaceAllStringFunc(s, func(m string) string {
		// A run of hexadecimal letters alone is a word, of digits alone a number (below).
		if strings.Trim(strings.ToLower(m), "0123456789") == "" || !strings.ContainsAny(m, "0123456789") {
			return m
		}
		return "<hex>"
	})
	s = fpNumber.ReplaceAllString(s, "<n>")
	return strings.TrimSpace(fpSpace.ReplaceAllString(s, " "))
}

// Fingerprint is the dead letter's failure cause: its error class and normalised message
// (Cause), and a short stable name for it (ID, 12 hexadecimal digits of their SHA-256), the
// value --fingerprint takes.
type Fingerprint struct {
	ID    string `json:"fingerprint"`
	Cause string `json:"cause"`
}

// FingerprintOf is d's fingerprint.
func FingerprintOf(d DeadLetter) Fingerprint {
	norm := NormaliseError(d.ErrorMessage)
	cause := norm
	if d.ErrorClass != "" {
		cause = d.ErrorClass + ": " + norm
	}
	sum := sha256.Sum256([]byte(d.ErrorClass + "\x00" + norm))
	return Fingerprint{ID: hex.EncodeToString(sum[:])[:fingerprintLen], Cause: cause}
}

// ValidFingerprint reports whether s can be a fingerprint's ID: 12 lower-case hexadecimal
// digits.
func ValidFingerprint(s string) bool {
	if len(s) != fingerprintLen {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
