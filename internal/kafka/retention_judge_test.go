package kafka

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRetentionOf pins how a DescribeConfigs answer for one topic is judged: every answer is
// known, forever or unknown with its cause, and nothing is assumed for what was not said.
func TestRetentionOf(t *testing.T) {
	cfg := func(kv ...string) []kadm.Config {
		var out []kadm.Config
		for i := 0; i < len(kv); i += 2 {
			v := kv[i+1]
			out = append(out, kadm.Config{Key: kv[i], Value: &v, Source: kmsg.ConfigSourceDynamicTopicConfig})
		}
		return out
	}
	cases := []struct {
		name     string
		rc       kadm.ResourceConfig
		state    RetentionState
		horizon  time.Duration
		cause    UnknownCause
		describe string
	}{
		{"delete 7d", kadm.ResourceConfig{Configs: cfg("cleanup.policy", "delete", "retention.ms", "604800000", "retention.bytes", "-1")},
			RetentionKnown, 7 * 24 * time.Hour, "", "7d"},
		{"compact and delete", kadm.ResourceConfig{Configs: cfg("cleanup.policy", "compact, delete", "retention.ms", "129600000")},
			RetentionKnown, 36 * time.Hour, "", "1d12h (and compacted)"},
		{"forever by retention.ms", kadm.ResourceConfig{Configs: cfg("cleanup.policy", "delete", "retention.ms", "-1")},
			RetentionForever, 0, "", "forever"},
		{"compact alone", kadm.ResourceConfig{Configs: cfg("cleanup.policy", "compact", "retention.ms", "604800000")},
			RetentionForever, 0, "", "compacted: not deleted by age"},
		{"compact alone, no retention.ms", kadm.ResourceConfig{Configs: cfg("cleanup.policy", "compact")},
			RetentionForever, 0, "", "compacted: not deleted by age"},
		{"no retention.ms", kadm.ResourceConfig{Configs: cfg("cleanup.policy", "delete")},
			RetentionUnknown, 0, CauseNotReported, "unknown (not reported)"},
		{"no cleanup.policy", kadm.ResourceConfig{Configs: cfg("retention.ms", "604800000")},
			RetentionUnknown, 0, CauseNotReported, "unknown (not reported)"},
		{"nothing at all", kadm.ResourceConfig{},
			RetentionUnknown, 0, CauseNotReported, "unknown (not reported)"},
		{"value withheld", kadm.ResourceConfig{Configs: append(cfg("cleanup.policy", "delete"), kadm.Config{Key: "retention.ms"})},
			RetentionUnknown, 0, CauseNotReported, "unknown (not reported)"},
		{"garbage retention.ms", kadm.ResourceConfig{Configs: cfg("cleanup.policy", "delete", "retention.ms", "soon")},
			RetentionUnknown, 0, CauseNotReported, "unknown (not reported)"},
		{"undefined negative", kadm.ResourceConfig{Configs: cfg("cleanup.policy", "delete", "retention.ms", "-7")},
			RetentionUnknown, 0, CauseNotReported, "unknown (not reported)"},
		{"empty policy", kadm.ResourceConfig{Configs: cfg("cleanup.policy", "", "retention.ms", "1000")},
			RetentionUnknown, 0, CauseNotReported, "unknown (not reported)"},
		{"denied", kadm.ResourceConfig{Err: kerr.TopicAuthorizationFailed},
			RetentionUnknown, 0, CauseDenied, "unknown (DescribeConfigs denied)"},
		{"no such topic", kadm.ResourceConfig{Err: kerr.UnknownTopicOrPartition},
			RetentionUnknown, 0, CauseNoTopic, "unknown (no such topic)"},
		{"other error", kadm.ResourceConfig{Err: kerr.PolicyViolation, ErrMessage: "no"},
			RetentionUnknown, 0, CauseError, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.rc.Name = "t"
			r := retentionOf(c.rc)
			if r.State != c.state || r.Horizon != c.horizon || r.Cause != c.cause {
				t.Fatalf("state %s horizon %v cause %q (why %q), want %s %v %q", r.State, r.Horizon, r.Cause, r.Why, c.state, c.horizon, c.cause)
			}
			if (r.State == RetentionKnown) != (r.Why == "") {
				t.Errorf("why %q with state %s", r.Why, r.State)
			}
			if c.describe != "" && r.Describe() != c.describe {
				t.Errorf("Describe = %q, want %q", r.Describe(), c.describe)
			}
			if _, err := json.Marshal(r); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestRetentionJSON(t *testing.T) {
	ms, bytes := int64(604800000), int64(-1)
	known := Retention{Topic: "t", CleanupPolicy: "delete", Ms: &ms, Bytes: &bytes, State: RetentionKnown, Horizon: 7 * 24 * time.Hour}
	b, err := json.Marshal(known)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"cleanup_policy":"delete","retention_ms":604800000,"retention_bytes":-1,"state":"known","horizon":"7d"}`
	if string(b) != want {
		t.Errorf("known:\n got %s\nwant %s", b, want)
	}
	var back Retention
	if err := json.Unmarshal(b, &back); err != nil || back.Horizon != known.Horizon || back.Describe() != "7d" {
		t.Errorf("read back: %+v, %v", back, err)
	}
	b, _ = json.Marshal(retentionOf(kadm.ResourceConfig{Name: "t", Err: kerr.TopicAuthorizationFailed}))
	if s := string(b); !strings.Contains(s, `"retention_ms":null`) || !strings.Contains(s, `"state":"unknown"`) ||
		!strings.Contains(s, `"unknown_cause":"denied"`) || !strings.Contains(s, `"horizon":null`) {
		t.Errorf("denied: %s", s)
	}
}
