package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fieldwork/fieldwork/internal/timespec"
)

// RetentionState is what is known of how long a topic keeps its records.
type RetentionState string

const (
	// RetentionKnown: records are deleted by age, once older than the topic's Horizon.
	RetentionKnown RetentionState = "known"
	// RetentionForever: no record is ever deleted by age (retention.ms -1, or cleanup.policy
	// compact without delete: the latest record of each key stays).
	RetentionForever RetentionState = "forever"
	// RetentionUnknown: the configs could not be read or do not say; Why tells which. Nothing
	// is assumed in its place.
	RetentionUnknown RetentionState = "unknown"
)

// UnknownCause says why a retention is RetentionUnknown.
type UnknownCause string

const (
	// CauseNotReported: the broker answered but did not report cleanup.policy or retention.ms
	// (or reported a value Kafka does not define).
	CauseNotReported UnknownCause = "not_reported"
	// CauseDenied: DescribeConfigs on the topic was denied by the cluster's ACLs.
	CauseDenied UnknownCause = "denied"
	// CauseNoTopic: the topic does not exist on the cluster.
	CauseNoTopic UnknownCause = "no_such_topic"
	// CauseError: the broker answered for this topic with another error (see Err).
	CauseError UnknownCause = "error"
)

// Retention is how a topic's records leave it, as the cluster reports it: the configs that
// decide it, and what follows from them. The configs are the effective values, broker and
// cluster defaults included.
type Retention struct {
	// Topic is the topic's name (not in JSON: a report holds a retention beside its topic).
	Topic string `json:"-"`
	// CleanupPolicy is cleanup.policy without spaces ("delete", "compact", "compact,delete");
	// "" when not reported.
	CleanupPolicy string `json:"cleanup_policy"`
	// Ms is retention.ms (-1: no limit), nil when not reported.
	Ms *int64 `json:"retention_ms"`
	// Bytes is retention.bytes per partition (-1: no limit), nil when not reported. Past it
	// Kafka deletes the oldest segments whatever their age, so a record may go before Horizon.
	Bytes *int64         `json:"retention_bytes"`
	State RetentionState `json:"state"`
	// Horizon is how long a record stays at least, when State is RetentionKnown: retention.ms.
	// Kafka deletes whole segments, so a record may outlive it, never undercut it (unless
	// retention.bytes deletes first).
	Horizon time.Duration `json:"-"`
	// Cause is set when State is RetentionUnknown.
	Cause UnknownCause `json:"unknown_cause,omitempty"`
	// Why says in a sentence why State is forever or unknown ("" when known).
	Why string `json:"why,omitempty"`
	// Err is the broker's error for the topic when Cause is CauseDenied, CauseNoTopic or
	// CauseError (a kerr error: errors.Is works on it).
	Err error `json:"-"`
	// Configs are the reported entries of RetentionConfigKeys, in that order, with where each
	// value comes from, for a report that shows them.
	Configs []TopicConfig `json:"-"`
}

// RetentionConfigKeys are the topic configs Retention reads.
var RetentionConfigKeys = []string{"cleanup.policy", "retention.ms", "retention.bytes"}

// TopicConfig is one reported topic config and where its value comes from: "topic" (set on
// the topic), "broker", "cluster" (a dynamic cluster-wide default), "default" (Kafka's) or
// "unknown".
type TopicConfig struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Source string `json:"source"`
}

// Known reports whether State is RetentionKnown, and the horizon then.
func (r Retention) Known() (time.Duration, bool) { return r.Horizon, r.State == RetentionKnown }

// Compacted reports whether the policy includes compact.
func (r Retention) Compacted() bool { return slices.Contains(r.policies(), "compact") }

// DeletesByAge reports whether records are deleted once older than the horizon.
func (r Retention) DeletesByAge() bool { return r.State == RetentionKnown }

func (r Retention) policies() []string {
	if r.CleanupPolicy == "" {
		return nil
	}
	return strings.Split(r.CleanupPolicy, ",")
}

// Describe says in a few words how records leave the topic: "7d", "7d (and compacted)",
// "forever" (retention.ms -1), "compacted: not deleted by age", "unknown (DescribeConfigs
// denied)", "unknown (no such topic)", "unknown (not reported)".
func (r Retention) Describe() string {
	switch r.State {
	case RetentionKnown:
		d := timespec.Format(r.Horizon)
		if r.Compacted() {
			return d + " (and compacted)"
		}
		return d
	case RetentionForever:
		if !slices.Contains(r.policies(), "delete") {
			return "compacted: not deleted by age"
		}
		return "forever"
	}
	switch r.Cause {
	case CauseDenied:
		return "unknown (DescribeConfigs denied)"
	case CauseNoTopic:
		return "unknown (no such topic)"
	case CauseNotReported:
		return "unknown (not reported)"
	}
	return "unknown (" + r.Why + ")"
}

// MarshalJSON adds the horizon as Format writes it ("7d"), null unless known.
func (r Retention) MarshalJSON() ([]byte, error) {
	type plain Retention
	var horizon *string
	if r.State == RetentionKnown {
		h := timespec.Format(r.Horizon)
		horizon = &h
	}
	return json.Marshal(struct {
		plain
		Horizon *string `json:"horizon"`
	}{plain(r), horizon})
}

// UnmarshalJSON reads what MarshalJSON wrote, the horizon included (from retention_ms).
func (r *Retention) UnmarshalJSON(b []byte) error {
	type plain Retention
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*r = Retention(p)
	if r.State == RetentionKnown && r.Ms != nil {
		r.Horizon = time.Duration(*r.Ms) * time.Millisecond
	}
	return nil
}

// Retention reads cleanup.policy, retention.ms and retention.bytes of topics in one
// DescribeConfigs request and says, per topic, how long records stay. A topic whose configs
// cannot be read (DescribeConfigs denied, the topic missing, another error of the broker
// for it) or do not say is RetentionUnknown with the cause: one such topic never fails the
// call, and nothing is assumed for it. Only a request that gets no answer at all is an error.
// Every topic asked for is in the map.
func (c *Cluster) Retention(ctx context.Context, topics []string) (map[string]Retention, error) {
	out := make(map[string]Retention, len(topics))
	if len(topics) == 0 {
		return out, nil
	}
	names := slices.Clone(topics)
	slices.Sort(names)
	names = slices.Compact(names)
	// kmsg rather than kadm: kadm turns one topic's authorization error into an error of the
	// whole answer, and the other topics' configs are lost with it.
	req := kmsg.NewPtrDescribeConfigsRequest()
	for _, name := range names {
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType = kmsg.ConfigResourceTypeTopic
		rr.ResourceName = name
		rr.ConfigNames = RetentionConfigKeys
		req.Resources = append(req.Resources, rr)
	}
	var failed error
	for _, shard := range c.Client.RequestSharded(ctx, req) {
		if shard.Err != nil {
			failed = shard.Err
			continue
		}
		for _, r := range shard.Resp.(*kmsg.DescribeConfigsResponse).Resources {
			rc := kadm.ResourceConfig{Name: r.ResourceName, Err: kerr.ErrorForCode(r.ErrorCode)}
			if r.ErrorMessage != nil {
				rc.ErrMessage = *r.ErrorMessage
			}
			for _, cf := range r.Configs {
				rc.Configs = append(rc.Configs, kadm.Config{Key: cf.Name, Value: cf.Value, Sensitive: cf.IsSensitive, Source: cf.Source})
			}
			out[r.ResourceName] = retentionOf(rc)
		}
	}
	if len(out) == 0 && failed != nil {
		return nil, fmt.Errorf("describe the configs of %s: %w", strings.Join(names, ", "), failed)
	}
	for _, t := range names {
		if _, ok := out[t]; !ok {
			why := "the broker's answer left it out"
			if failed != nil {
				why = fmt.Sprintf("DescribeConfigs got no answer for it: %v", failed)
			}
			out[t] = Retention{Topic: t, State: RetentionUnknown, Cause: CauseError, Err: failed, Why: why}
		}
	}
	return out, nil
}

// retentionOf judges one topic's DescribeConfigs answer.
func retentionOf(rc kadm.ResourceConfig) Retention {
	r := Retention{Topic: rc.Name, State: RetentionUnknown}
	if rc.Err != nil {
		r.Err = rc.Err
		switch {
		case errors.Is(rc.Err, kerr.TopicAuthorizationFailed), errors.Is(rc.Err, kerr.ClusterAuthorizationFailed):
			denied := &NotAuthorizedError{Operation: OpDescribeConfigs, ResourceType: ResourceTopic, Resource: rc.Name, Err: rc.Err}
			r.Cause, r.Why = CauseDenied, fmt.Sprintf("DescribeConfigs on topic %s was denied (%v): its retention cannot be read without that ACL", rc.Name, denied)
		case errors.Is(rc.Err, kerr.UnknownTopicOrPartition):
			r.Cause, r.Why = CauseNoTopic, fmt.Sprintf("topic %s does not exist", rc.Name)
		default:
			r.Cause, r.Why = CauseError, fmt.Sprintf("DescribeConfigs on topic %s failed: %v", rc.Name, rc.Err)
			if rc.ErrMessage != "" {
				r.Why += " (" + rc.ErrMessage + ")"
			}
		}
		return r
	}
	var msText string
	var policyReported bool
	byKey := map[string]kadm.Config{}
	for _, cf := range rc.Configs {
		if cf.Value != nil && slices.Contains(RetentionConfigKeys, cf.Key) {
			byKey[cf.Key] = cf
		}
	}
	for _, k := range RetentionConfigKeys {
		cf, ok := byKey[k]
		if !ok {
			continue
		}
		v := *cf.Value
		r.Configs = append(r.Configs, TopicConfig{Name: k, Value: v, Source: ConfigSource(cf.Source)})
		switch k {
		case "cleanup.policy":
			r.CleanupPolicy, policyReported = strings.ReplaceAll(v, " ", ""), true
		case "retention.ms":
			msText = v
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				r.Ms = &n
			}
		case "retention.bytes":
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				r.Bytes = &n
			}
		}
	}
	deletes, compacts := slices.Contains(r.policies(), "delete"), slices.Contains(r.policies(), "compact")
	notReported := func(why string) Retention {
		r.Cause, r.Why = CauseNotReported, why
		return r
	}
	switch {
	case !policyReported:
		return notReported("the broker did not report cleanup.policy")
	case compacts && !deletes:
		r.State, r.Why = RetentionForever, "cleanup.policy is compact: the latest record of every key is kept forever"
		return r
	case !deletes:
		return notReported(fmt.Sprintf("cleanup.policy %q is neither delete nor compact", r.CleanupPolicy))
	case msText == "":
		return notReported("the broker did not report retention.ms")
	case r.Ms == nil:
		return notReported(fmt.Sprintf("retention.ms %q is not a number", msText))
	case *r.Ms == -1:
		r.State, r.Why = RetentionForever, "retention.ms is -1: records are never deleted by age"
		return r
	case *r.Ms < 0 || *r.Ms > int64(1<<63-1)/int64(time.Millisecond):
		return notReported(fmt.Sprintf("retention.ms %d is not a retention Kafka defines", *r.Ms))
	}
	r.State, r.Horizon = RetentionKnown, time.Duration(*r.Ms)*time.Millisecond
	return r
}

// ConfigSource names where a config value comes from, as reports show it.
func ConfigSource(s kmsg.ConfigSource) string {
	switch s {
	case kmsg.ConfigSourceDynamicTopicConfig:
		return "topic"
	case kmsg.ConfigSourceDynamicBrokerConfig, kmsg.ConfigSourceStaticBrokerConfig:
		return "broker"
	case kmsg.ConfigSourceDynamicDefaultBrokerConfig:
		return "cluster"
	case kmsg.ConfigSourceDefaultConfig:
		return "default"
	}
	return "unknown"
}
