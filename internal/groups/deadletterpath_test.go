package groups

import (
	"testing"

	"github.com/fieldwork/fieldwork/internal/kafka"
)

// The rules of the dead-letter path check, on facts given: each case the integration tests
// confirm on a real broker, and the auto-created topic, which the test broker does not allow.
func TestJudgeDeadLetterPath(t *testing.T) {
	cluster := kafka.ShareDLQCluster{Prefix: "dlq.", ShareVersion: 2, DeliveryLimit: 5}
	good := deadLetterFacts{group: "g", cluster: cluster, config: kafka.ShareGroupConfig{DLQTopic: "dlq.g", CopyRecord: true},
		exists: true, enabled: true, sources: []string{"orders"},
		limits: map[string]kafka.RecordLimit{"dlq.g": {Bytes: 1 << 20}, "orders": {Bytes: 1 << 20}}}
	cases := []struct {
		name           string
		change         func(*deadLetterFacts)
		rule, severity string
		lost           bool
	}{
		{"whole", func(*deadLetterFacts) {}, RuleRecordSize, SeverityOK, false},
		{"share.version 1", func(f *deadLetterFacts) { f.cluster.ShareVersion = 1 }, RuleShareVersion, SeverityLoss, true},
		{"no topic", func(f *deadLetterFacts) { f.config.DLQTopic = "" }, RuleTopicSet, SeverityLoss, true},
		{"no prefix", func(f *deadLetterFacts) { f.config.DLQTopic = "g.dlq"; f.limits["g.dlq"] = f.limits["dlq.g"] }, RulePrefix, SeverityLoss, true},
		{"missing", func(f *deadLetterFacts) { f.exists, f.enabled = false, false }, RuleTopicExists, SeverityLoss, true},
		{"missing, auto-created", func(f *deadLetterFacts) { f.exists, f.enabled, f.cluster.AutoCreate = false, false, true }, RuleTopicExists, SeverityOK, false},
		{"not enabled", func(f *deadLetterFacts) { f.enabled = false }, RuleTopicEnabled, SeverityLoss, true},
		{"copy off", func(f *deadLetterFacts) { f.config.CopyRecord = false }, RuleCopy, SeverityWarning, false},
		{"small DLQ", func(f *deadLetterFacts) { f.limits["dlq.g"] = kafka.RecordLimit{Bytes: 2048} }, RuleRecordSize, SeverityWarning, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := good
			f.limits = map[string]kafka.RecordLimit{}
			for k, v := range good.limits {
				f.limits[k] = v
			}
			c.change(&f)
			p := judgeDeadLetterPath(f)
			if got := severityOf(p, c.rule); got != c.severity || p.Lost != c.lost {
				t.Fatalf("%s: %s, lost %v; want %s, lost %v: %+v", c.rule, got, p.Lost, c.severity, c.lost, p.Findings)
			}
		})
	}
}
