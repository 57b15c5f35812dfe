// Package redact is the one rule for showing a secret-bearing string: a store DSN, a URL, or a
// message that may quote either (docs/design.md §4.2). Every rule fails closed: what cannot be
// parsed is not shown at all.
package redact

import (
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode"
)

// Mask stands in for every password.
const Mask = "xxxxx"

// QueryMask stands in for every query value of a URL.
const QueryMask = "REDACTED"

// UnparseableDSN is shown instead of a DSN that cannot be parsed.
const UnparseableDSN = "<unparseable DSN>"

// UnparseableURL is shown instead of a URL that cannot be parsed.
const UnparseableURL = "<unparseable URL>"

var (
	schemePrefix = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.\-]*:`)
	kvStart      = regexp.MustCompile(`^\s*[A-Za-z_][A-Za-z0-9_]*\s*=`)
)

// DSN returns dsn with no password: the URL forms (scheme://user:PW@host/db, scheme:/… with one
// slash, user:PW@host:port/db with no scheme; the user info ends at the last '@', so an
// unencoded '@' in the password is hidden whole), ?password= and ?sslpassword= query values,
// the key=value form (password=… and sslpassword=…, quoted or not), and sqlite:PATH. A DSN
// that fits none of them, or that does not parse as the form it looks like, is UnparseableDSN.
func DSN(dsn string) string {
	d := strings.TrimSpace(dsn)
	if d == "" {
		return ""
	}
	lower := strings.ToLower(d)
	switch {
	case strings.HasPrefix(lower, "sqlite:"):
		path, query, hasQuery := strings.Cut(d, "?")
		if !hasQuery {
			return d
		}
		q, ok := redactQuery(query, isPasswordKey, Mask)
		if !ok {
			return UnparseableDSN
		}
		return path + "?" + q
	case kvStart.MatchString(d) && !strings.Contains(d, "://"):
		out, ok := redactKeyValue(d)
		if !ok {
			return UnparseableDSN
		}
		return out
	}
	out, ok := redactURLForm(d)
	if !ok {
		return UnparseableDSN
	}
	return out
}

// Secrets returns the substrings of dsn that DSN hides (the password as written and decoded),
// longest first, so that a message quoting parts of the DSN can be scrubbed of them.
func Secrets(dsn string) []string {
	var out []string
	d := strings.TrimSpace(dsn)
	if kvStart.MatchString(d) && !strings.Contains(d, "://") {
		out = append(out, kvSecrets(d)...)
	} else {
		rest := stripScheme(d)
		if at := lastAt(rest); at >= 0 {
			if _, pw, ok := strings.Cut(rest[:at], ":"); ok && pw != "" {
				out = append(out, pw)
				// A driver that ends the user info at the first '@' reads the rest as the host.
				out = append(out, strings.Split(pw, "@")...)
			}
		}
		if _, query, ok := strings.Cut(d, "?"); ok {
			if vals, err := url.ParseQuery(query); err == nil {
				for k, vs := range vals {
					if isPasswordKey(k) {
						out = append(out, vs...)
					}
				}
			}
		}
	}
	return variants(out)
}

// URL returns u without its user info, with every query value (and any fragment) replaced
// by REDACTED (https://hooks.example/x?token=REDACTED), and with every path segment that looks
// like a token replaced too (https://hooks.example/services/T0/B0/REDACTED): many webhook
// services put their secret in the path. A URL that does not parse is UnparseableURL.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" {
		return UnparseableURL
	}
	u.User = nil
	if segs := strings.Split(u.Path, "/"); slices.ContainsFunc(segs, tokenLike) {
		for i, seg := range segs {
			if tokenLike(seg) {
				segs[i] = QueryMask
			}
		}
		u.Path, u.RawPath = strings.Join(segs, "/"), ""
	}
	if u.RawQuery != "" {
		q, ok := redactQuery(u.RawQuery, func(string) bool { return true }, QueryMask)
		if !ok {
			return UnparseableURL
		}
		u.RawQuery = q
	}
	if u.Fragment != "" || u.RawFragment != "" {
		u.Fragment, u.RawFragment = QueryMask, ""
	}
	return u.String()
}

// URLSecrets returns the parts of raw that URL hides (user info, query values, fragment), as
// written and decoded, longest first.
func URLSecrets(raw string) []string {
	var out []string
	u, err := url.Parse(raw)
	if err != nil {
		return variants([]string{raw})
	}
	if u.User != nil {
		out = append(out, u.User.Username())
		if pw, ok := u.User.Password(); ok {
			out = append(out, pw)
		}
	}
	if vals, err := url.ParseQuery(u.RawQuery); err == nil {
		for _, vs := range vals {
			out = append(out, vs...)
		}
	} else {
		out = append(out, u.RawQuery)
	}
	out = append(out, u.Fragment)
	for _, seg := range strings.Split(u.Path, "/") {
		if tokenLike(seg) {
			out = append(out, seg)
		}
	}
	return variants(out)
}

// tokenLike reports whether a URL path segment looks like a secret rather than a name: 16
// characters or more, with both letters and digits (a Slack or Discord webhook's token, an
// API key). A word, a short id or a version number is not one.
func tokenLike(seg string) bool {
	if len(seg) < 16 {
		return false
	}
	letters, digits := false, false
	for _, r := range seg {
		switch {
		case unicode.IsLetter(r):
			letters = true
		case unicode.IsDigit(r):
			digits = true
		}
	}
	return letters && digits
}

var (
	textURLPassword = regexp.MustCompile(`((?:[A-Za-z][A-Za-z0-9+.\-]*:/{0,2})?[^\s:/@"'` + "`" + `]+:)([^\s"'` + "`" + `]*)(@)`)
	textQueryPW     = regexp.MustCompile(`(?i)([?&](?:ssl)?password=)([^&#\s"'` + "`" + `]*)`)
	textKVPassword  = regexp.MustCompile(`(?i)(\b(?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'?|\S+)`)
)

// Text replaces every password it can recognise in free text with xxxxx: URL user info (with
// or without a scheme; to the last '@' of the word), ?password= query values and
// password=VALUE pairs. It errs on the side of hiding too much. Prefer Scrub when the secrets
// are known.
func Text(text string) string {
	text = textURLPassword.ReplaceAllString(text, "${1}"+Mask+"${3}")
	text = textQueryPW.ReplaceAllString(text, "${1}"+Mask)
	return textKVPassword.ReplaceAllString(text, "${1}"+Mask)
}

// Scrub removes every known secret (as written, URL-escaped or decoded) from text, then applies
// Text. A very short secret masks every occurrence of its letters: noise, never a leak.
func Scrub(text string, secrets ...string) string {
	for _, s := range variants(secrets) {
		text = strings.ReplaceAll(text, s, Mask)
	}
	return Text(text)
}

func variants(secrets []string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, s := range secrets {
		add(s)
		add(url.QueryEscape(s))
		add(url.PathEscape(s))
		add(url.UserPassword("u", s).String()[2:])
		if d, err := url.QueryUnescape(s); err == nil {
			add(d)
		}
		if d, err := url.PathUnescape(s); err == nil {
			add(d)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

func isPasswordKey(k string) bool {
	k = strings.ToLower(k)
	return k == "password" || k == "sslpassword"
}

// stripScheme drops a leading "scheme:" and any slashes after it.
func stripScheme(d string) string {
	if m := schemePrefix.FindString(d); m != "" && !looksLikeHostPort(d, m) {
		return strings.TrimLeft(d[len(m):], "/")
	}
	return d
}

// looksLikeHostPort tells "user:pw@host" and "host:5432/db" (no scheme) from "scheme:…": a
// prefix followed by an '@' before any '/' is user info, not a scheme.
func looksLikeHostPort(d, prefix string) bool {
	rest := d[len(prefix):]
	if strings.HasPrefix(rest, "/") {
		return false
	}
	slash := strings.IndexAny(rest, "/?#")
	at := strings.LastIndex(rest, "@")
	return at >= 0 && (slash < 0 || at < slash) || rest != "" && rest[0] >= '0' && rest[0] <= '9'
}

// lastAt is the end of the user info: the last '@' before the query.
func lastAt(rest string) int {
	end := len(rest)
	if q := strings.LastIndex(rest, "?"); q >= 0 && q > strings.LastIndex(rest, "@") {
		end = q
	}
	return strings.LastIndex(rest[:end], "@")
}

func redactURLForm(d string) (string, bool) {
	prefix := ""
	if m := schemePrefix.FindString(d); m != "" && !looksLikeHostPort(d, m) {
		rest := d[len(m):]
		slashes := len(rest) - len(strings.TrimLeft(rest, "/"))
		prefix = d[:len(m)+slashes]
	}
	rest := d[len(prefix):]
	if prefix == "" && !strings.Contains(rest, "@") {
		return "", false // neither a URL nor user@host: nothing says where a password would be
	}
	userinfo, hostpart := "", rest
	if at := lastAt(rest); at >= 0 {
		userinfo, hostpart = rest[:at+1], rest[at+1:]
		if user, _, hasPW := strings.Cut(userinfo[:len(userinfo)-1], ":"); hasPW {
			userinfo = user + ":" + Mask + "@"
		}
	}
	path, query, hasQuery := strings.Cut(hostpart, "?")
	if hasQuery {
		q, ok := redactQuery(query, isPasswordKey, Mask)
		if !ok {
			return "", false
		}
		path += "?" + q
	}
	out := prefix + userinfo + path
	// What is shown must itself parse as a URL; anything else is not shown.
	check := out
	if prefix == "" || !strings.Contains(prefix, "//") {
		check = "postgres://" + userinfo + path
	}
	u, err := url.Parse(check)
	if err != nil || u.Host == "" && !strings.HasPrefix(path, "/") {
		return "", false
	}
	return out, true
}

// redactQuery masks the values of the keys hide selects, keeping the order and the other
// values as written. A query that does not parse is not shown.
func redactQuery(query string, hide func(string) bool, mask string) (string, bool) {
	frag := ""
	if h := strings.IndexByte(query, '#'); h >= 0 {
		query, frag = query[:h], "#"+QueryMask
	}
	if _, err := url.ParseQuery(query); err != nil {
		return "", false
	}
	parts := strings.Split(query, "&")
	for i, p := range parts {
		k, _, hasValue := strings.Cut(p, "=")
		key, err := url.QueryUnescape(k)
		if err != nil {
			return "", false
		}
		if hasValue && hide(key) {
			parts[i] = k + "=" + mask
		}
	}
	return strings.Join(parts, "&") + frag, true
}

// kvToken is one key=value pair of a libpq connection string, with the span of its value.
type kvToken struct {
	key        string
	start, end int // the value's span in the input, quotes included
	value      string
}

// parseKeyValue splits a libpq key=value connection string: keys, '=', values either quoted
// ('…' with \' and \\) or bare (to the next space, with \ escapes). It fails on anything else.
func parseKeyValue(s string) ([]kvToken, bool) {
	var out []kvToken
	i, n := 0, len(s)
	skip := func() {
		for i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
			i++
		}
	}
	for {
		skip()
		if i >= n {
			return out, true
		}
		ks := i
		for i < n && s[i] != '=' && s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r' {
			i++
		}
		key := s[ks:i]
		skip()
		if key == "" || i >= n || s[i] != '=' {
			return nil, false
		}
		i++
		skip()
		vs := i
		var val strings.Builder
		if i < n && s[i] == '\'' {
			i++
			closed := false
			for i < n {
				if s[i] == '\\' && i+1 < n {
					val.WriteByte(s[i+1])
					i += 2
					continue
				}
				if s[i] == '\'' {
					closed = true
					i++
					break
				}
				val.WriteByte(s[i])
				i++
			}
			if !closed {
				return nil, false
			}
		} else {
			for i < n && s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r' {
				if s[i] == '\\' && i+1 < n {
					i++
				} else if s[i] == '\'' {
					return nil, false
				}
				val.WriteByte(s[i])
				i++
			}
		}
		out = append(out, kvToken{key: key, start: vs, end: i, value: val.String()})
	}
}

func redactKeyValue(s string) (string, bool) {
	toks, ok := parseKeyValue(s)
	if !ok {
		return "", false
	}
	var b strings.Builder
	last := 0
	for _, t := range toks {
		if isPasswordKey(t.key) {
			b.WriteString(s[last:t.start])
			b.WriteString(Mask)
			last = t.end
		}
	}
	b.WriteString(s[last:])
	return b.String(), true
}

func kvSecrets(s string) []string {
	toks, ok := parseKeyValue(s)
	if !ok {
		// Everything after a password key may be the password.
		if m := textKVPassword.FindStringSubmatchIndex(s); m != nil {
			return []string{strings.TrimSpace(s[m[3]:])}
		}
		return nil
	}
	var out []string
	for _, t := range toks {
		if isPasswordKey(t.key) {
			out = append(out, t.value, s[t.start:t.end])
		}
	}
	return out
}
