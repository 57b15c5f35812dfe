package dlq

import (
	"fmt"
	"strings"
)

// A dead-letter convention is declared once, in its own file (convention_*.go): its header
// keys, a convention value naming who writes it, and one declare call for each header Parse
// reads, which says what the header is (the original record's topic, partition, offset or
// timestamp: its route), how it is encoded and whether its text repeats from one dead letter to
// the next. Everything else is derived from those declarations (docs/design.md §3.2):
//
//   - Parse's header index (which header is which, by key) and the route it reads first;
//   - which headers are a convention's, for discovery (which convention wrote a record) and
//     for the replay, which strips them (IsDeadLetterHeader);
//   - the conventions table in README.md and docs/design.md (conventionsTable; a test checks
//     the documents against it).
//
// What a declaration cannot say (a reason rule, a message made of several headers) is the
// convention's read function. conventions lists the conventions in their order of precedence.

// convention is one convention's declaration.
type convention struct {
	name Convention
	// prefixes: every header key that starts with one of them is the convention's, as is the
	// key of every header declared for it. Lower case.
	prefixes []string
	// routeFirst: where a route header repeats, the first is the original record's (Spring's
	// retry topics append theirs; SmallRye writes its own before the failed record's). Else
	// the last, as everywhere headers are read.
	routeFirst bool
	// read reads the convention's headers beyond the route, which Parse has read: error,
	// reason (the rule per convention is in docs/design.md §3.2), the rest. nil: nothing more.
	read func(p *headerReader)
	// fromKey, for a convention that writes no header of its own, reads the dead letter from
	// its key and reports whether the key is one; Parse asks it only of a record with no
	// dead-letter header.
	fromKey func(p *headerReader, key []byte) bool
	// doc is the convention's row of the conventions table beyond what the declarations say.
	doc conventionDoc

	// Derived from the declared headers (deriveConventions).
	keys     []string        // the declared keys no prefix covers
	route    [numRoles][]hdr // for each role, the headers that play it, the preferred first
	routeEnc [numRoles]how   // for each role, its headers' encoding
}

// conventionDoc is the prose of a convention's row in the conventions table.
type conventionDoc struct {
	title  string // its name in a list of conventions (ConventionTitles)
	writer string // who writes such dead letters
	route  string // where the original record was, when no header says it
	errors string // where the error, its class and its root cause are read
	reason string // the reason rule
	other  string // what else is read
}

// conventions lists every convention, in the order Parse prefers them when a record carries
// the headers of more than one. An array, so that its length is a constant.
var conventions = [...]*convention{
	&fieldworkConvention, &springConvention, &connectConvention, &watermillConvention,
	&smallRyeConvention, &karafkaConvention, &wolverineConvention, &dataContractConvention,
	&kafkaStreamsConvention, &shareGroupConvention, &uberKafkaConvention,
}

// hdr identifies a header Parse reads: its index in headerSpecs.
type hdr int16

// how says what a declared header is: its role in the route (at most one), its encoding (at
// most one; UTF-8 text, numbers in decimal, when none) and whether its text repeats.
type how uint8

// The roles of a route header.
const (
	routeTopic how = 1 + iota
	routePartition
	routeOffset
	routeTimestamp
	numRoles
	roleMask how = 7
)

// The encodings of a header that is not UTF-8 text with numbers in decimal.
const (
	// bigEndian: a partition is a 4-byte big-endian int, an offset and a timestamp (epoch
	// milliseconds) 8-byte.
	bigEndian how = 1 << 3
	// rfc3339: a time in RFC 3339.
	rfc3339 how = 2 << 3
	// endpointURI: a topic named by an endpoint URI (kafka://topic/NAME), or a topic name.
	endpointURI how = 3 << 3
	encMask     how = 3 << 3
)

// repeats marks a header whose text is usually the same from one dead letter to the next:
// interned when a scan keeps a string table. Ids, offsets and stack traces are not.
const repeats how = 1 << 5

// headerSpec is one declared header.
type headerSpec struct {
	key  string     // lower case
	conv Convention // "": Parse reads it, but it is no convention's (a replay keeps it)
	how  how
}

// maxHeaders bounds the declared headers, so that a reader's header index is an array.
const maxHeaders = 128

var (
	// headerSpecs are the declared headers; a hdr is an index into it.
	headerSpecs []headerSpec
	// hdrByKey is the hdr of each declared lower-case key.
	hdrByKey map[string]hdr
	// repeated[id] is headerSpecs[id].how&repeats != 0.
	repeated [maxHeaders]bool
)

// declare declares a header Parse reads, of convention c ("" for a header that is no
// convention's), and returns its hdr.
func declare(c Convention, key string, h how) hdr {
	headerSpecs = append(headerSpecs, headerSpec{key: asciiLower(key), conv: c, how: h})
	return hdr(len(headerSpecs) - 1)
}

func init() {
	if err := deriveConventions(); err != nil {
		panic("dlq: " + err.Error())
	}
}

// deriveConventions builds the header index and each convention's keys and route from the
// declarations.
func deriveConventions() error {
	if len(headerSpecs) > maxHeaders {
		return fmt.Errorf("%d headers declared, more than maxHeaders (%d)", len(headerSpecs), maxHeaders)
	}
	hdrByKey = make(map[string]hdr, len(headerSpecs))
	for i, s := range headerSpecs {
		id := hdr(i)
		if _, dup := hdrByKey[s.key]; dup {
			return fmt.Errorf("header %s declared twice", s.key)
		}
		hdrByKey[s.key] = id
		repeated[id] = s.how&repeats != 0
		if s.conv == "" {
			if s.how&roleMask != 0 {
				return fmt.Errorf("header %s routes, but is no convention's", s.key)
			}
			continue
		}
		c := conventionAt(s.conv)
		if c == nil {
			return fmt.Errorf("header %s declared for %s, which conventions does not list", s.key, s.conv)
		}
		if role := s.how & roleMask; role != 0 {
			if c.route[role] != nil && c.routeEnc[role] != s.how&encMask {
				return fmt.Errorf("header %s: encoded unlike the other headers of its role", s.key)
			}
			c.route[role] = append(c.route[role], id)
			c.routeEnc[role] = s.how & encMask
		}
		if !c.hasPrefix(s.key) {
			c.keys = append(c.keys, s.key)
		}
	}
	return nil
}

func (c *convention) hasPrefix(lower string) bool {
	for _, pre := range c.prefixes {
		if strings.HasPrefix(lower, pre) {
			return true
		}
	}
	return false
}

// conventionIndex is the index in conventions of the convention a lower-case header key
// belongs to, -1 for none.
func conventionIndex(lower string) int {
	for i, c := range conventions {
		if c.hasPrefix(lower) {
			return i
		}
		for _, k := range c.keys {
			if lower == k {
				return i
			}
		}
	}
	return -1
}

// conventionOfHeader names the convention a lower-case header key belongs to, "" for none.
func conventionOfHeader(lower string) Convention {
	if i := conventionIndex(lower); i >= 0 {
		return conventions[i].name
	}
	return ""
}

// conventionAt is the declaration of c; nil for ConventionUnknown.
func conventionAt(c Convention) *convention {
	for _, conv := range conventions {
		if conv.name == c {
			return conv
		}
	}
	return nil
}

// readRoute reads where the original record was, as c's route headers say: topic, partition,
// offset, timestamp. Of a role's headers, the first the record has is read (a convention that
// writes one header under two names: Spring's recoverer and retry topics, Karafka's current and
// older names).
func (p *headerReader) readRoute(c *convention) {
	get := p.last
	if c.routeFirst {
		get = p.first
	}
	d := p.d
	if alts := c.route[routeTopic]; alts != nil {
		if id := p.pick(alts); c.routeEnc[routeTopic] == endpointURI {
			d.OriginalTopic = p.endpointTopic(id, get)
		} else {
			d.OriginalTopic = p.topic(id, get)
		}
	}
	if alts := c.route[routePartition]; alts != nil {
		id := p.pick(alts)
		if n, ok := p.integer(id, get, 31, c.routeEnc[routePartition]); ok {
			d.OriginalPartition = p.partition(id, n)
		}
	}
	if alts := c.route[routeOffset]; alts != nil {
		id := p.pick(alts)
		if n, ok := p.integer(id, get, 63, c.routeEnc[routeOffset]); ok {
			d.OriginalOffset = p.offset(id, n)
		}
	}
	if alts := c.route[routeTimestamp]; alts != nil && !p.noTimes {
		id := p.pick(alts)
		if c.routeEnc[routeTimestamp] == rfc3339 {
			d.OriginalTimestamp = p.rfc3339(id, get)
		} else if ms, ok := p.integer(id, get, 63, c.routeEnc[routeTimestamp]); ok {
			d.OriginalTimestamp = p.epochMillis(id, ms)
		}
	}
}

// pick is the first of alts the record has, else the last.
func (p *headerReader) pick(alts []hdr) hdr {
	for _, id := range alts[:len(alts)-1] {
		if p.firstAt[id] > 0 {
			return id
		}
	}
	return alts[len(alts)-1]
}

// ConventionTitles names every convention Parse reads, in order of precedence, as help and
// documents list them ("Spring Kafka and its retry topics").
func ConventionTitles() []string {
	titles := make([]string, len(conventions))
	for i, c := range conventions {
		titles[i] = c.doc.title
	}
	return titles
}

// conventionsTable is the conventions table of README.md and docs/design.md, in Markdown, from
// the declarations: one row a convention, in order of precedence.
func conventionsTable() string {
	var b strings.Builder
	b.WriteString("| convention | headers (stripped on replay) | original topic / partition / offset | error, root cause | reason | other |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, c := range conventions {
		fmt.Fprintf(&b, "| `%s`: %s | %s | %s | %s | %s | %s |\n", c.name, c.doc.writer, c.strippedDoc(),
			c.routeDoc(), c.doc.errors, c.doc.reason, c.doc.other)
	}
	return b.String()
}

func (c *convention) strippedDoc() string {
	var keys []string
	for _, pre := range c.prefixes {
		keys = append(keys, "`"+pre+"*`")
	}
	for _, k := range c.keys {
		keys = append(keys, "`"+k+"`")
	}
	if keys == nil {
		return "none"
	}
	return strings.Join(keys, ", ")
}

func (c *convention) routeDoc() string {
	if c.doc.route != "" {
		return c.doc.route
	}
	var parts []string
	for role := routeTopic; role < numRoles; role++ {
		alts := c.route[role]
		if alts == nil {
			continue
		}
		var names []string
		for _, id := range alts {
			names = append(names, "`"+headerSpecs[id].key+"`")
		}
		s := strings.Join(names, " else ")
		if role == routeTimestamp {
			s = "timestamp " + s
		}
		if note := encodingDoc(role, headerSpecs[alts[0]].how&encMask); note != "" {
			s += " (" + note + ")"
		}
		parts = append(parts, s)
	}
	s := strings.Join(parts, ", ")
	if c.routeFirst {
		s = "the first of each: " + s
	}
	if c.route[routePartition] == nil && c.route[routeOffset] == nil {
		s += " (no partition or offset)"
	}
	return s
}

func encodingDoc(role, enc how) string {
	switch {
	case enc == bigEndian && role == routePartition:
		return "4-byte big-endian"
	case enc == bigEndian && role == routeTimestamp:
		return "8-byte big-endian, epoch ms"
	case enc == bigEndian:
		return "8-byte big-endian"
	case enc == rfc3339:
		return "RFC 3339"
	case enc == endpointURI:
		return "a `kafka://topic/NAME` URI or a name"
	}
	return ""
}
