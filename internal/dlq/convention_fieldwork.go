package dlq

// fieldwork's own dead letters: the fw.dlq.* headers (headers.go), written by NewDeadLetter.
var fieldworkConvention = convention{
	name: ConventionFieldwork, prefixes: []string{HeaderPrefix}, read: (*headerReader).fieldwork,
	doc: conventionDoc{
		title:  "fieldwork's fw.dlq.* headers",
		writer: "fieldwork's consumer, `groups skip`",
		errors: "`fw.dlq.error`, `fw.dlq.error_class`",
		reason: "`fw.dlq.reason`",
		other:  "group, handler, attempts, failure times, event id, the schema expected (`fw.dlq.schema`); a bounded copy (`fw.dlq.value_omitted`, `fw.dlq.value_bytes`)",
	},
}

var (
	hFwTopic         = declare(ConventionFieldwork, HeaderTopic, routeTopic|repeats)
	hFwPartition     = declare(ConventionFieldwork, HeaderPartition, routePartition)
	hFwOffset        = declare(ConventionFieldwork, HeaderOffset, routeOffset)
	hFwTimestamp     = declare(ConventionFieldwork, HeaderTimestamp, routeTimestamp|rfc3339)
	hFwGroup         = declare(ConventionFieldwork, HeaderGroup, repeats)
	hFwHandler       = declare(ConventionFieldwork, HeaderHandler, repeats)
	hFwEventID       = declare(ConventionFieldwork, HeaderEventID, 0)
	hFwReason        = declare(ConventionFieldwork, HeaderReason, repeats)
	hFwError         = declare(ConventionFieldwork, HeaderError, repeats)
	hFwErrorClass    = declare(ConventionFieldwork, HeaderErrorClass, repeats)
	hFwSchema        = declare(ConventionFieldwork, HeaderSchema, 0)
	hFwAttempts      = declare(ConventionFieldwork, HeaderAttempts, 0)
	hFwFirstFailedAt = declare(ConventionFieldwork, HeaderFirstFailedAt, rfc3339)
	hFwFailedAt      = declare(ConventionFieldwork, HeaderFailedAt, rfc3339)
	// A bounded copy's headers are read whatever the convention (headerReader.bounded).
	hFwValueOmitted = declare(ConventionFieldwork, HeaderValueOmitted, 0)
	hFwValueBytes   = declare(ConventionFieldwork, HeaderValueBytes, 0)
)

func (p *headerReader) fieldwork() {
	d := p.d
	d.Group = p.text(hFwGroup, p.last)
	d.Handler = p.text(hFwHandler, p.last)
	d.EventID = p.text(hFwEventID, p.last)
	if v, ok := p.last(hFwReason); ok {
		d.Reason = p.textOf(hFwReason, v)
		if !knownReason(d.Reason) {
			p.problemf(hFwReason, "unknown reason %s (want one of malformed, unsupported, rejected, exhausted)", quote(d.Reason))
		}
	}
	d.ErrorMessage = p.text(hFwError, p.last)
	d.ErrorClass = p.text(hFwErrorClass, p.last)
	d.ExpectedSchema = p.text(hFwSchema, p.last)
	if n, ok := p.count(hFwAttempts); ok {
		d.Attempts = int(n)
	}
	d.FirstFailedAt = p.rfc3339(hFwFirstFailedAt, p.last)
	d.FailedAt = p.rfc3339(hFwFailedAt, p.last)
}
