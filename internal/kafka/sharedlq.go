package kafka

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The configuration names of share groups and their broker-written dead letters (KIP-932,
// KIP-1191), each named once.
const (
	// ConfigShareDLQPrefix is the cluster config every share-group DLQ topic name must start with.
	ConfigShareDLQPrefix = "errors.deadletterqueue.topic.name.prefix"
	// ConfigShareDLQAutoCreate is the cluster config that lets the broker create a missing DLQ topic.
	ConfigShareDLQAutoCreate = "errors.deadletterqueue.auto.create.topics.enable"
	// ConfigShareDLQTopicEnable is the topic config that lets share groups write dead letters to it.
	ConfigShareDLQTopicEnable = "errors.deadletterqueue.group.enable"
	// ConfigShareGroupDLQTopic is the group config naming the group's DLQ topic (empty: none).
	ConfigShareGroupDLQTopic = "errors.deadletterqueue.topic.name"
	// ConfigShareGroupDLQCopy is the group config that copies key and value into a dead letter.
	ConfigShareGroupDLQCopy = "errors.deadletterqueue.copy.record.enable"
	// ConfigShareDeliveryLimit is the group config bounding a record's deliveries.
	ConfigShareDeliveryLimit = "share.delivery.count.limit"
	// ConfigShareBrokerDeliveryLimit is the broker default of ConfigShareDeliveryLimit.
	ConfigShareBrokerDeliveryLimit = "group.share.delivery.count.limit"
	// ConfigShareAutoOffsetReset is the group config that says where a new share group starts.
	ConfigShareAutoOffsetReset = "share.auto.offset.reset"
	// FeatureShareVersion is the feature whose level 2 writes share-group dead letters.
	FeatureShareVersion = "share.version"
)

// DefaultShareDLQPrefix is ConfigShareDLQPrefix's default.
const DefaultShareDLQPrefix = "dlq."

// ShareDLQCluster is what the cluster says about share groups' dead letters.
type ShareDLQCluster struct {
	// Prefix every share-group DLQ topic name must carry.
	Prefix string `json:"prefix"`
	// AutoCreate: the broker creates a group's missing DLQ topic.
	AutoCreate bool `json:"auto_create"`
	// ShareVersion is the finalized share.version feature level (0: share groups off; 2:
	// dead letters written).
	ShareVersion int16 `json:"share_version"`
	// DeliveryLimit is the brokers' default delivery count limit.
	DeliveryLimit int `json:"delivery_limit"`
}

// The functions below take a client (the consumer has one, the commands have Cluster.Client).

// ReadShareDLQCluster reads the cluster's share-group dead-letter settings from one broker's
// configuration (they are cluster-wide) and the finalized features.
func ReadShareDLQCluster(ctx context.Context, cl *kgo.Client) (ShareDLQCluster, error) {
	adm := kadm.NewClient(cl)
	out := ShareDLQCluster{Prefix: DefaultShareDLQPrefix, DeliveryLimit: 5}
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return out, fmt.Errorf("broker metadata: %w", err)
	}
	ids := md.Brokers.NodeIDs()
	if len(ids) == 0 {
		return out, fmt.Errorf("the cluster reported no brokers")
	}
	rcs, err := adm.DescribeBrokerConfigs(ctx, ids[0])
	if err != nil {
		return out, fmt.Errorf("describe broker configs: %w", err)
	}
	for _, rc := range rcs {
		if rc.Err != nil {
			return out, fmt.Errorf("broker %s configs: %w", rc.Name, rc.Err)
		}
		for _, c := range rc.Configs {
			v := c.MaybeValue()
			switch c.Key {
			case ConfigShareDLQPrefix:
				out.Prefix = v
			case ConfigShareDLQAutoCreate:
				out.AutoCreate = v == "true"
			case ConfigShareBrokerDeliveryLimit:
				if n, err := strconv.Atoi(v); err == nil {
					out.DeliveryLimit = n
				}
			}
		}
	}
	out.ShareVersion, err = finalizedFeature(ctx, cl, FeatureShareVersion)
	return out, err
}

// finalizedFeature is the cluster's finalized level of one feature (0 when not finalized).
func finalizedFeature(ctx context.Context, cl *kgo.Client, name string) (int16, error) {
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName = "fieldwork"
	req.ClientSoftwareVersion = "1"
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, fmt.Errorf("api versions: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return 0, fmt.Errorf("api versions: %w", err)
	}
	for _, f := range resp.FinalizedFeatures {
		if f.Name == name {
			return f.MaxVersionLevel, nil
		}
	}
	return 0, nil
}

// ShareGroupConfig is a share group's own configuration (GROUP config resource), as set or
// as the broker defaults it.
type ShareGroupConfig struct {
	// DLQTopic is errors.deadletterqueue.topic.name; empty: rejected records are archived.
	DLQTopic string `json:"dlq_topic"`
	// CopyRecord: dead letters carry the record's key and value.
	CopyRecord bool `json:"copy_record"`
	// DeliveryLimit is share.delivery.count.limit (the broker default when not set).
	DeliveryLimit int `json:"delivery_limit"`
	// AutoOffsetReset is share.auto.offset.reset (latest when not set).
	AutoOffsetReset string `json:"auto_offset_reset"`
	// AutoOffsetResetSet: the group has share.auto.offset.reset of its own (not the default).
	AutoOffsetResetSet bool `json:"auto_offset_reset_set"`
}

// ReadShareGroupConfig reads one group's configuration (DescribeConfigs on the GROUP
// resource); a group never configured answers with the defaults.
func ReadShareGroupConfig(ctx context.Context, cl *kgo.Client, group string) (ShareGroupConfig, error) {
	out := ShareGroupConfig{AutoOffsetReset: "latest"}
	values, own, err := groupConfigValues(ctx, cl, group)
	if err != nil {
		return out, err
	}
	out.AutoOffsetResetSet = own[ConfigShareAutoOffsetReset]
	out.DLQTopic = values[ConfigShareGroupDLQTopic]
	out.CopyRecord = values[ConfigShareGroupDLQCopy] == "true"
	if n, err := strconv.Atoi(values[ConfigShareDeliveryLimit]); err == nil {
		out.DeliveryLimit = n
	}
	if v := values[ConfigShareAutoOffsetReset]; v != "" {
		out.AutoOffsetReset = v
	}
	return out, nil
}

// SetShareGroupConfig sets group configs (IncrementalAlterConfigs on the GROUP resource),
// e.g. ConfigShareAutoOffsetReset or ConfigShareGroupDLQTopic; an empty value deletes the key.
// It returns once DescribeConfigs shows every value set (the broker answers the alter before
// it has applied it: a read at once, or a consumer joining at once, can still see the old
// values), or with ctx's error when it does not within ctx.
func SetShareGroupConfig(ctx context.Context, cl *kgo.Client, group string, kv map[string]string) error {
	if err := alterShareGroupConfig(ctx, cl, group, kv); err != nil {
		return err
	}
	for {
		now, _, err := groupConfigValues(ctx, cl, group)
		if err != nil {
			return err
		}
		applied := true
		for k, v := range kv {
			if v != "" && now[k] != v {
				applied = false
			}
		}
		if applied {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("alter group %s configs: not applied: %w", group, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// groupConfigValues are group's configs as DescribeConfigs gives them, and which of them the
// group sets itself (not the brokers' defaults).
func groupConfigValues(ctx context.Context, cl *kgo.Client, group string) (values map[string]string, own map[string]bool, err error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType = kmsg.ConfigResourceTypeGroupConfig
	rr.ResourceName = group
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, nil, fmt.Errorf("describe group %s configs: %w", group, err)
	}
	out, own := map[string]string{}, map[string]bool{}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return nil, nil, fmt.Errorf("describe group %s configs: %w", group, err)
		}
		for _, c := range r.Configs {
			if c.Value != nil {
				out[c.Name] = *c.Value
			}
			if c.Source == kmsg.ConfigSourceGroupConfig {
				own[c.Name] = true
			}
		}
	}
	return out, own, nil
}

// alterShareGroupConfig is SetShareGroupConfig's request.
func alterShareGroupConfig(ctx context.Context, cl *kgo.Client, group string, kv map[string]string) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType = kmsg.ConfigResourceTypeGroupConfig
	rr.ResourceName = group
	for k, v := range kv {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name = k
		if v == "" {
			c.Op = kmsg.IncrementalAlterConfigOpDelete
		} else {
			c.Op = kmsg.IncrementalAlterConfigOpSet
			c.Value = kmsg.StringPtr(v)
		}
		rr.Configs = append(rr.Configs, c)
	}
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("alter group %s configs: %w", group, err)
	}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			msg := ""
			if r.ErrorMessage != nil {
				msg = ": " + *r.ErrorMessage
			}
			return fmt.Errorf("alter group %s configs: %w%s", group, err, msg)
		}
	}
	return nil
}

// ShareDLQTopics says, of the given topics, which carry errors.deadletterqueue.group.enable=true
// (topics that do not exist are absent from the map).
func ShareDLQTopics(ctx context.Context, cl *kgo.Client, topics ...string) (map[string]bool, error) {
	adm := kadm.NewClient(cl)
	out := make(map[string]bool, len(topics))
	if len(topics) == 0 {
		return out, nil
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("describe topic configs: %w", err)
	}
	for _, rc := range rcs {
		if rc.Err != nil {
			continue
		}
		enabled := false
		for _, c := range rc.Configs {
			if c.Key == ConfigShareDLQTopicEnable {
				enabled = strings.EqualFold(c.MaybeValue(), "true")
			}
		}
		out[rc.Name] = enabled
	}
	return out, nil
}

// The headers of a dead letter the broker writes for a share group (KIP-1191), each a UTF-8
// string; ShareDLQMessageRejected and ShareDLQMessageExhausted are the only messages.
const (
	ShareDLQHeaderTopic         = "__dlq.errors.topic"
	ShareDLQHeaderPartition     = "__dlq.errors.partition"
	ShareDLQHeaderOffset        = "__dlq.errors.offset"
	ShareDLQHeaderGroup         = "__dlq.errors.group"
	ShareDLQHeaderDeliveryCount = "__dlq.errors.delivery.count"
	ShareDLQHeaderMessage       = "__dlq.errors.message"

	ShareDLQMessageRejected  = "Offset rejected by client."
	ShareDLQMessageExhausted = "Offset delivery count exceeded the threshold."
)

// The rules a share group's dead-letter path is judged by (ShareDLQFinding.Rule), in the
// order the broker meets them when a member rejects a record (KIP-1191).
const (
	ShareRuleVersion      = "share_version"     // share.version ≥ 2, or no dead letter is written
	ShareRuleTopicSet     = "dlq_topic_set"     // the group names a DLQ topic
	ShareRulePrefix       = "dlq_prefix"        // its name starts with the cluster's prefix
	ShareRuleTopicExists  = "dlq_topic_exists"  // it exists, or the broker creates it
	ShareRuleTopicEnabled = "dlq_topic_enabled" // it carries errors.deadletterqueue.group.enable=true
)

// ShareDLQFinding is one rule of a share group's dead-letter path and what it found: Loss when
// a rejected record would be archived with no dead letter (gone, with nothing a client sees).
type ShareDLQFinding struct {
	Rule    string
	Loss    bool
	Message string
}

// JudgeShareDLQPath is the one judgement of whether a share group's rejected records reach a
// dead letter: the cluster's feature level, the group's DLQ topic (topic, "" when it names
// none), its name against the cluster's prefix, whether it exists (or is created) and carries
// the enable flag. Each rule met gives a finding, loss or not; the topic's rules only once the
// group names one, the enable flag only when the topic exists. `groups check` reports them all;
// a share-group member refuses to start on the first loss.
func JudgeShareDLQPath(c ShareDLQCluster, group, topic string, exists, enabled bool) []ShareDLQFinding {
	var out []ShareDLQFinding
	add := func(rule string, loss bool, format string, args ...any) {
		out = append(out, ShareDLQFinding{Rule: rule, Loss: loss, Message: fmt.Sprintf(format, args...)})
	}
	if v := c.ShareVersion; v < 2 {
		add(ShareRuleVersion, true, "%s is %d: the broker writes no dead letter below 2 and archives every rejected record, with no log line (kafka-features upgrade --feature %s=2)", FeatureShareVersion, v, FeatureShareVersion)
	} else {
		add(ShareRuleVersion, false, "%s is %d: the broker writes dead letters", FeatureShareVersion, v)
	}
	if topic == "" {
		add(ShareRuleTopicSet, true, "share group %s names no DLQ topic (%s): a rejected record is archived and gone (set it, e.g. to %s%s)",
			group, ConfigShareGroupDLQTopic, c.Prefix, group)
		return out
	}
	add(ShareRuleTopicSet, false, "the group's DLQ topic is %s", topic)
	const archived = "the broker refuses to write to it and archives the record (log: Failed to write to DLQ, proceeding to ARCHIVED regardless.)"
	if !strings.HasPrefix(topic, c.Prefix) {
		add(ShareRulePrefix, true, "DLQ topic %s does not start with the cluster's prefix %q (%s): %s", topic, c.Prefix, ConfigShareDLQPrefix, archived)
	} else {
		add(ShareRulePrefix, false, "DLQ topic %s starts with the cluster's prefix %q", topic, c.Prefix)
	}
	switch {
	case !exists && c.AutoCreate:
		add(ShareRuleTopicExists, false, "DLQ topic %s does not exist yet: the broker creates it at the first dead letter (%s=true)", topic, ConfigShareDLQAutoCreate)
	case !exists:
		add(ShareRuleTopicExists, true, "DLQ topic %s does not exist and the broker does not create it (%s=false): a rejected record is archived and gone (create it with %s=true)",
			topic, ConfigShareDLQAutoCreate, ConfigShareDLQTopicEnable)
	default:
		add(ShareRuleTopicExists, false, "DLQ topic %s exists", topic)
		if !enabled {
			add(ShareRuleTopicEnabled, true, "DLQ topic %s lacks %s=true: %s", topic, ConfigShareDLQTopicEnable, archived)
		} else {
			add(ShareRuleTopicEnabled, false, "DLQ topic %s carries %s=true", topic, ConfigShareDLQTopicEnable)
		}
	}
	return out
}
