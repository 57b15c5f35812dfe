package groups

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/wording"
)

// The rules of the dead-letter path check (Finding.Rule), in the order the broker meets them
// when a share-group member rejects a record or a record reaches the delivery count limit
// (KIP-1191; docs/design.md, "A share group's dead-letter path").
// The first five are internal/kafka's (kafka.JudgeShareDLQPath, the one judgement of a loss,
// which a share-group member also makes before it starts).
const (
	RuleShareVersion = kafka.ShareRuleVersion
	RuleTopicSet     = kafka.ShareRuleTopicSet
	RulePrefix       = kafka.ShareRulePrefix
	RuleTopicExists  = kafka.ShareRuleTopicExists
	RuleTopicEnabled = kafka.ShareRuleTopicEnabled
	RuleCopy         = "dlq_copy"        // dead letters carry the record, or coordinates only
	RuleRecordSize   = "dlq_record_size" // a copied record fits the DLQ topic
)

// The severities of a finding.
const (
	SeverityOK = "ok"
	// SeverityWarning: records reach the DLQ, but not whole (coordinates only, or the payload
	// of the largest ones dropped).
	SeverityWarning = "warning"
	// SeverityLoss: a rejected record is archived with no dead letter: it is gone.
	SeverityLoss = "loss"
)

// Finding is one rule of the check and what it found.
type Finding struct {
	Rule     string `json:"rule"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
}

// DeadLetterPath is where a share group's rejected records go, and why.
type DeadLetterPath struct {
	Group string `json:"group"`
	// Lost says a rejected record would be archived with no dead letter (a loss finding).
	Lost bool `json:"lost"`
	// Verdict is the path in words.
	Verdict       string                 `json:"verdict"`
	DLQTopic      string                 `json:"dlq_topic"`
	CopyRecord    bool                   `json:"copy_record"`
	DeliveryLimit int                    `json:"delivery_limit"`
	Cluster       kafka.ShareDLQCluster  `json:"cluster"`
	Findings      []Finding              `json:"findings"`
	Limits        map[string]RecordLimit `json:"record_limits"`
}

// RecordLimit is a topic's max.message.bytes as the check compares it.
type RecordLimit struct {
	Bytes  int    `json:"bytes"`
	Source string `json:"source"`
}

// deadLetterFacts are what the check reads of the cluster, the group and its topics.
type deadLetterFacts struct {
	group   string
	cluster kafka.ShareDLQCluster
	config  kafka.ShareGroupConfig
	// exists and enabled say whether the DLQ topic exists and carries the enable flag.
	exists, enabled bool
	// limits are the record limits of the DLQ topic (when it exists) and the source topics.
	limits  map[string]kafka.RecordLimit
	sources []string
}

// CheckDeadLetterPath reads what decides where group's rejected records go (the cluster's
// share.version, prefix and auto-create; the group's DLQ topic, copy flag and delivery limit;
// the DLQ topic's existence, enable flag and max.message.bytes against those of sources, the
// topics the group reads) and judges it rule by rule. A group never configured is judged
// too: it has no DLQ, so its rejected records are lost.
func CheckDeadLetterPath(ctx context.Context, c *kafka.Cluster, group string, sources []string) (*DeadLetterPath, error) {
	f := deadLetterFacts{group: group, sources: sources}
	var err error
	if f.cluster, err = kafka.ReadShareDLQCluster(ctx, c.Client); err != nil {
		return nil, err
	}
	if f.config, err = kafka.ReadShareGroupConfig(ctx, c.Client, group); err != nil {
		return nil, kafka.Denied(err, kafka.OpDescribeConfigs, kafka.ResourceGroup, group)
	}
	topics := append([]string{}, sources...)
	if t := f.config.DLQTopic; t != "" {
		flags, err := kafka.ShareDLQTopics(ctx, c.Client, t)
		if err != nil {
			return nil, err
		}
		f.enabled, f.exists = flags[t]
		if f.exists {
			topics = append(topics, t)
		}
	}
	if f.limits, err = c.RecordLimits(ctx, topics); err != nil {
		return nil, err
	}
	return judgeDeadLetterPath(f), nil
}

// judgeDeadLetterPath applies the rules to the facts read.
func judgeDeadLetterPath(f deadLetterFacts) *DeadLetterPath {
	p := &DeadLetterPath{Group: f.group, DLQTopic: f.config.DLQTopic, CopyRecord: f.config.CopyRecord, Cluster: f.cluster,
		DeliveryLimit: f.config.DeliveryLimit, Findings: []Finding{}, Limits: map[string]RecordLimit{}}
	if p.DeliveryLimit == 0 {
		p.DeliveryLimit = f.cluster.DeliveryLimit
	}
	for t, l := range f.limits {
		p.Limits[t] = RecordLimit{Bytes: l.Bytes, Source: string(l.Source)}
	}
	add := func(rule, severity, format string, args ...any) {
		p.Findings = append(p.Findings, Finding{Rule: rule, Severity: severity, Message: fmt.Sprintf(format, args...)})
	}
	for _, j := range kafka.JudgeShareDLQPath(f.cluster, f.group, f.config.DLQTopic, f.exists, f.enabled) {
		severity := SeverityOK
		if j.Loss {
			severity = SeverityLoss
		}
		p.Findings = append(p.Findings, Finding{Rule: j.Rule, Severity: severity, Message: j.Message})
	}
	if f.config.DLQTopic == "" {
		return p.judged()
	}
	if !f.config.CopyRecord {
		add(RuleCopy, SeverityWarning, "%s is off: a dead letter carries the record's coordinates only (topic, partition, offset, group, delivery count), no key or value; the record is read from its source topic while the source holds it",
			kafka.ConfigShareGroupDLQCopy)
		return p.judged()
	}
	add(RuleCopy, SeverityOK, "%s is on: a dead letter carries the record's key and value (not its headers or timestamp)", kafka.ConfigShareGroupDLQCopy)
	judgeRecordSize(f, add)
	return p.judged()
}

// judgeRecordSize compares the DLQ topic's record limit with each source topic's. The broker
// reads the rejected record's whole batch (decompressed) to copy it, and a batch larger than
// the DLQ topic's max.message.bytes is skipped with a WARN ("exceeded the N byte budget on its
// own"): the dead letter is still written, without key or value. A source topic that accepts
// larger batches than its DLQ can lose payloads so.
func judgeRecordSize(f deadLetterFacts, add func(rule, severity, format string, args ...any)) {
	dl, ok := f.limits[f.config.DLQTopic]
	if !ok || !f.exists {
		return
	}
	sources := append([]string{}, f.sources...)
	sort.Strings(sources)
	var over []string
	for _, s := range sources {
		if sl, ok := f.limits[s]; ok && sl.Bytes > dl.Bytes {
			over = append(over, fmt.Sprintf("%s accepts %d", s, sl.Bytes))
		}
	}
	switch {
	case len(sources) == 0:
		add(RuleRecordSize, SeverityOK, "DLQ topic %s accepts batches of %d bytes; the group reads no topic yet to compare it with", f.config.DLQTopic, dl.Bytes)
	case len(over) > 0:
		add(RuleRecordSize, SeverityWarning, "DLQ topic %s accepts batches of %d bytes (max.message.bytes), less than its sources (%s): a rejected record whose batch is larger reaches it without key and value, with only a broker WARN",
			f.config.DLQTopic, dl.Bytes, strings.Join(over, "; "))
	default:
		add(RuleRecordSize, SeverityOK, "DLQ topic %s accepts batches of %d bytes, as large as %s: every rejected record is copied whole", f.config.DLQTopic, dl.Bytes, strings.Join(sources, ", "))
	}
}

// judged sets Lost and Verdict from the findings.
func (p *DeadLetterPath) judged() *DeadLetterPath {
	var lost, warned []string
	for _, f := range p.Findings {
		switch f.Severity {
		case SeverityLoss:
			lost = append(lost, f.Rule)
		case SeverityWarning:
			warned = append(warned, f.Rule)
		}
	}
	switch {
	case len(lost) > 0:
		p.Lost = true
		p.Verdict = "rejected records are archived and lost (" + strings.Join(lost, ", ") + ")"
	case len(warned) > 0:
		p.Verdict = "rejected records reach " + p.DLQTopic + ", not whole (" + strings.Join(warned, ", ") + ")"
	default:
		p.Verdict = "rejected records reach " + p.DLQTopic + " with their key and value"
	}
	return p
}

// CheckShareGroups checks the dead-letter path of each named share group (none named: every
// share group of the cluster), each against the topics it reads (its start offsets and its
// members' assignments). A named group that does not exist yet is checked on its configuration
// alone (a group's configs are set before it first runs); one of another type is a usage error.
func CheckShareGroups(ctx context.Context, c *kafka.Cluster, names []string) ([]*DeadLetterPath, error) {
	listed, err := c.Admin.ListGroups(ctx)
	if err != nil && len(listed) == 0 {
		return nil, kafka.Denied(fmt.Errorf("list groups: %w", err), kafka.OpDescribe, kafka.ResourceCluster, "")
	}
	if len(names) == 0 {
		for _, g := range listed.Sorted() {
			if g.GroupType == TypeShare {
				names = append(names, g.Group)
			}
		}
	}
	out := make([]*DeadLetterPath, 0, len(names))
	for _, name := range names {
		if l, ok := listed[name]; ok && l.GroupType != TypeShare && l.GroupType != "" {
			return nil, fwerr.Usagef("%s is a %s group, not a share group: only share groups have a broker-written dead-letter path", name, l.GroupType)
		}
		sources, err := shareSources(ctx, c, name)
		if err != nil {
			return nil, err
		}
		p, err := CheckDeadLetterPath(ctx, c, name, sources)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// shareSources are the topics share group name reads: those it has start offsets on and
// those its members are assigned (none for a group that does not exist yet).
func shareSources(ctx context.Context, c *kafka.Cluster, name string) ([]string, error) {
	set := map[string]bool{}
	d, ok, err := describeShare(ctx, c, name)
	if err != nil {
		return nil, err
	}
	if ok {
		for _, m := range d.Members {
			for _, a := range m.assigned {
				set[a.Topic] = true
			}
		}
	}
	starts, err := shareStartsOf(ctx, c, name)
	if err != nil {
		return nil, err
	}
	for t := range starts {
		set[t] = true
	}
	return sortedKeys(set), nil
}

// CheckResult is the exit of `groups check`: a check error (exit 3) naming the groups whose
// rejected records would be lost, nil when none would.
func CheckResult(paths []*DeadLetterPath) error {
	var lost []string
	for _, p := range paths {
		if p.Lost {
			lost = append(lost, p.Group)
		}
	}
	if len(lost) == 0 {
		return nil
	}
	return fwerr.Checkf("rejected records would be archived and lost in %s: %s", wording.Plural(int64(len(lost)), "share group"), strings.Join(lost, ", "))
}
