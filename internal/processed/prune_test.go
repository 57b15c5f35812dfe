package processed_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fieldwork/fieldwork/internal/action"
	"github.com/fieldwork/fieldwork/internal/config"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/processed"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestPruneHorizonPolicy runs the replay-horizon policy against topics of the real Kafka
// and markers in the real PostgreSQL: per case, one consumer with three markers processed
// ten days ago that recorded the case's topic and one processed now, pruned with
// --older-than 7d. A safe window deletes exactly the three; a refusal deletes nothing and
// says why for that topic; --force deletes and warns.
func TestPruneHorizonPolicy(t *testing.T) {
	st := pgStore(t, true)
	str := func(s string) *string { return &s }
	short := testenv.Topic(t, 1, map[string]*string{"retention.ms": str("3600000")})   // 1h
	exact := testenv.Topic(t, 1, map[string]*string{"retention.ms": str("604800000")}) // 7d
	long := testenv.Topic(t, 1, map[string]*string{"retention.ms": str("2592000000")}) // 30d
	forever := testenv.Topic(t, 1, map[string]*string{"retention.ms": str("-1")})
	compact := testenv.Topic(t, 1, map[string]*string{"cleanup.policy": str("compact")})
	missing := testenv.Name(t, "fw-missing")
	real := func(context.Context) (*kafka.Cluster, error) {
		return kafka.Connect(context.Background(), config.Connection{Brokers: []string{testenv.Brokers(t)}}, 15*time.Second)
	}
	denied := deniedCluster(t, "closed")
	noBrokers := func(context.Context) (*kafka.Cluster, error) {
		return nil, fwerr.Wrap(fwerr.KindUsage, kafka.ErrNoBrokers)
	}
	now := time.Now()
	olderThan := 7 * 24 * time.Hour

	cases := []struct {
		name     string
		topic    string // recorded by the old markers ("": none)
		topics   []string
		cluster  func(context.Context) (*kafka.Cluster, error)
		force    bool
		deleted  int64
		horizon  string // of the one source topic
		problem  string // in the topic's problem ("": none)
		refusal  string // in the error ("": none)
		warning  string // in a warning ("": none)
		checked  bool
		errKind  fwerr.Kind
		noTopics bool
	}{
		{name: "retention shorter than the window", topic: short, cluster: real, deleted: 3, horizon: "1h", checked: true},
		{name: "retention equal to the window", topic: exact, cluster: real, deleted: 3, horizon: "7d", checked: true},
		{name: "retention longer than the window", topic: long, cluster: real, horizon: "30d", checked: true, errKind: fwerr.KindUsage,
			problem: "retention.ms 2592000000 (30d) is longer than --older-than 7d: use --older-than 30d or more", refusal: "refusing to prune markers older than 7d"},
		{name: "forever", topic: forever, cluster: real, horizon: "forever", checked: true, errKind: fwerr.KindUsage,
			problem: "retention.ms is -1", refusal: "refusing"},
		{name: "compacted", topic: compact, cluster: real, horizon: "forever", checked: true, errKind: fwerr.KindUsage,
			problem: "cleanup.policy is compact", refusal: "refusing"},
		{name: "unknown: no such topic", topic: missing, cluster: real, horizon: "unknown", checked: true, errKind: fwerr.KindUsage,
			problem: "the topic does not exist on " + testenv.Brokers(t), refusal: "refusing"},
		{name: "unknown: DescribeConfigs denied", topic: "closed", cluster: denied, horizon: "unknown", checked: true, errKind: fwerr.KindDenied,
			problem: "DescribeConfigs on topic closed was denied", refusal: "not authorized: DESCRIBE_CONFIGS on topic closed"},
		{name: "forced inside the horizon", topic: long, cluster: real, force: true, deleted: 3, horizon: "30d", checked: true,
			problem: "is longer than --older-than 7d", warning: "--force: pruning anyway: " + long + ": retention.ms 2592000000"},
		{name: "forced while unknown", topic: "closed", cluster: denied, force: true, deleted: 3, horizon: "unknown", checked: true,
			problem: "denied", warning: "--force: pruning anyway: closed: DescribeConfigs on topic closed was denied"},
		{name: "no topic recorded", cluster: real, errKind: fwerr.KindUsage, noTopics: true,
			refusal: "3 markers recorded no source topic, so their replay horizon is unknown: name their topics with --topic"},
		{name: "no topic recorded, named", topics: []string{short}, cluster: real, deleted: 3, horizon: "1h", checked: true},
		{name: "no brokers", topic: short, cluster: noBrokers, horizon: "unknown", errKind: fwerr.KindUsage,
			refusal: "cannot check the replay horizon of " + short},
		{name: "no brokers, forced", topic: short, cluster: noBrokers, force: true, deleted: 3, horizon: "unknown",
			warning: "--force: not checking the replay horizon of " + short},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			consumer := fmt.Sprintf("c%d", i)
			var old []dedup.Marker
			for j := range 3 {
				old = append(old, dedup.Marker{EventID: fmt.Sprintf("old-%d", j), Topic: tc.topic, ProcessedAt: now.Add(-10 * 24 * time.Hour)})
			}
			mark(t, st, consumer, append(old, dedup.Marker{EventID: "new", Topic: tc.topic, ProcessedAt: now})...)
			var warnings []string
			asked := ""
			rep, err := runPrune(ctx(t), st, tc.cluster, pruneCall{
				OlderThan: olderThan, Consumer: consumer, BatchSize: 2, Topics: tc.topics, Force: tc.force, Now: now,
				Confirm: func(_ *processed.PruneReport, q string) error { asked = q; return nil },
				Warn:    func(w string) { warnings = append(warnings, w) },
			})
			if tc.refusal == "" && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if tc.refusal != "" && (err == nil || fwerr.KindOf(err) != tc.errKind || !strings.Contains(err.Error(), tc.refusal)) {
				t.Fatalf("error %v (kind %v), want kind %v saying %q", err, fwerr.KindOf(err), tc.errKind, tc.refusal)
			}
			if rep == nil {
				t.Fatal("no report")
			}
			if rep.Candidates != 3 || rep.Deleted != tc.deleted || rep.HorizonChecked != tc.checked || rep.Forced != tc.force || rep.OlderThan != "7d" {
				t.Fatalf("candidates %d deleted %d checked %v forced %v older than %s", rep.Candidates, rep.Deleted, rep.HorizonChecked, rep.Forced, rep.OlderThan)
			}
			if (asked != "") != (tc.refusal == "") {
				t.Errorf("confirmation %q asked with refusal %q", asked, tc.refusal)
			}
			if tc.noTopics {
				if len(rep.Topics) != 0 || rep.NoTopic != 3 {
					t.Fatalf("topics %+v, no topic %d", rep.Topics, rep.NoTopic)
				}
			} else {
				if len(rep.Topics) != 1 {
					t.Fatalf("topics %+v", rep.Topics)
				}
				h := rep.Topics[0]
				if h.Horizon != tc.horizon || (tc.problem == "") != (h.Problem == "") || !strings.Contains(h.Problem, tc.problem) {
					t.Errorf("horizon %q problem %q, want %q and %q", h.Horizon, h.Problem, tc.horizon, tc.problem)
				}
				if h.Markers != 3 && len(tc.topics) == 0 {
					t.Errorf("markers of %s: %d", h.Topic, h.Markers)
				}
			}
			if tc.warning == "" && len(warnings) > 0 || tc.warning != "" && (len(warnings) != 1 || !strings.Contains(warnings[0], tc.warning)) {
				t.Errorf("warnings %q, want %q", warnings, tc.warning)
			}
			left, err := st.Lookup(ctx(t), consumer, []string{"old-0", "old-1", "old-2", "new"})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := left["new"]; !ok || int64(len(left)) != 4-tc.deleted {
				t.Errorf("%d markers left, want %d with the new one", len(left), 4-tc.deleted)
			}
		})
	}
}

// TestPruneNothingToDo: with no marker older than the window Kafka is never asked.
func TestPruneNothingToDo(t *testing.T) {
	st := pgStore(t, true)
	mark(t, st, "c", dedup.Marker{EventID: "new", Topic: "tasks"})
	rep, err := runPrune(ctx(t), st, func(context.Context) (*kafka.Cluster, error) {
		t.Error("Kafka was asked")
		return nil, errors.New("no")
	}, pruneCall{OlderThan: time.Hour, Confirm: func(*processed.PruneReport, string) error { t.Error("asked to confirm"); return nil }})
	if err != nil || rep.Candidates != 0 || rep.Deleted != 0 || len(rep.Topics) != 0 {
		t.Fatalf("%+v, %v", rep, err)
	}
	keys := jsonFields(rep)
	// The fields `processed prune` prints (consumer is left out when empty).
	if want := "[candidates candidates_without_topic deleted dry_run forced horizon_checked older_than processed_before reason table topics]"; fmt.Sprint(keys) != want {
		t.Errorf("json fields %v\nwant        %s", keys, want)
	}
	// A declined confirmation deletes nothing and is returned.
	mark(t, st, "c", dedup.Marker{EventID: "old", ProcessedAt: time.Now().Add(-2 * time.Hour)})
	declined := fwerr.Usagef("declined")
	_, err = runPrune(ctx(t), st, nil, pruneCall{OlderThan: time.Hour, Force: true, Confirm: func(*processed.PruneReport, string) error { return declined }})
	if !errors.Is(err, declined) {
		t.Fatalf("declined: %v", err)
	}
	if left, _ := st.Lookup(ctx(t), "c", []string{"old", "new"}); len(left) != 2 {
		t.Fatalf("%d markers left after declining", len(left))
	}
}

// TestPruneInterrupted: a prune stopped by SIGINT between two batches keeps what it deleted,
// says it was interrupted (exit 130), and is journaled as interrupted with its count, not as
// "context canceled".
func TestPruneInterrupted(t *testing.T) {
	st := pgStore(t, true)
	for i := range 5 {
		mark(t, st, "c", dedup.Marker{EventID: fmt.Sprintf("old-%d", i), ProcessedAt: time.Now().Add(-2 * time.Hour)})
	}
	c, cancel := context.WithCancel(ctx(t))
	defer cancel()
	rep, err := runPrune(c, st, nil, pruneCall{OlderThan: time.Hour, Force: true, BatchSize: 2, Journal: action.Record{Operator: "alice", Reason: "cleanup"},
		Progress: func(pr action.Progress) {
			if pr.Done >= 2 {
				cancel() // as SIGINT does, once the first batch is deleted
			}
		}})
	if fwerr.KindOf(err) != fwerr.KindInterrupted || rep == nil || rep.Deleted != 2 {
		t.Fatalf("interrupted prune: %v (%v), %+v", err, fwerr.KindOf(err), rep)
	}
	if fwerr.Stopped(err) != "the interruption" {
		t.Errorf("stopped by %q", fwerr.Stopped(err))
	}
	if left, _ := st.Lookup(ctx(t), "c", []string{"old-0", "old-1", "old-2", "old-3", "old-4"}); len(left) != 3 {
		t.Fatalf("%d markers left, want 3", len(left))
	}
	got, err := st.MarkerActions(ctx(t), 10)
	if err != nil || len(got) != 1 || got[0].Deleted != 2 || got[0].Error != "interrupted after 2 markers" {
		t.Fatalf("journal: %+v, %v", got, err)
	}
}

// TestHorizonDecision pins the policy for one topic without a broker.
func TestHorizonDecision(t *testing.T) {
	ms := func(n int64) *int64 { return &n }
	day := 24 * time.Hour
	for _, tc := range []struct {
		r       kafka.Retention
		horizon string
		problem string
	}{
		{kafka.Retention{State: kafka.RetentionKnown, CleanupPolicy: "delete", Ms: ms(86400000), Horizon: day}, "1d", ""},
		{kafka.Retention{State: kafka.RetentionKnown, CleanupPolicy: "delete", Ms: ms(30 * 86400000), Horizon: 30 * day}, "30d", "is longer than --older-than 7d"},
		{kafka.Retention{State: kafka.RetentionForever, CleanupPolicy: "delete", Ms: ms(-1)}, "forever", "retention.ms is -1"},
		{kafka.Retention{State: kafka.RetentionForever, CleanupPolicy: "compact"}, "forever", "cleanup.policy is compact"},
		{kafka.Retention{State: kafka.RetentionUnknown, Cause: kafka.CauseNotReported, Why: "the broker did not report retention.ms"}, "unknown", "did not report"},
	} {
		h := processed.Horizon(processed.TopicHorizon{Topic: "t"}, tc.r, 7*day)
		if h.Horizon != tc.horizon || (tc.problem == "") != (h.Problem == "") || !strings.Contains(h.Problem, tc.problem) {
			t.Errorf("%+v: horizon %q problem %q, want %q %q", tc.r, h.Horizon, h.Problem, tc.horizon, tc.problem)
		}
		// A replay's guard asks the same rule per record: markers of an event processed age
		// ago may be pruned exactly when Horizon lets a prune of that age through.
		for _, age := range []time.Duration{0, day - time.Second, day, 7 * day, 30 * day, 31 * day} {
			want := tc.r.State == kafka.RetentionKnown && processed.Horizon(processed.TopicHorizon{}, tc.r, age).Problem == ""
			if got := processed.PastHorizon(tc.r, age); got != want {
				t.Errorf("%+v: PastHorizon(age %s) = %v, but Horizon says %v", tc.r, age, got, want)
			}
		}
	}
}

// deniedCluster is franz-go's in-process broker with topic open, where a user may not
// DescribeConfigs on topic: the shared Kafka enforces no ACLs and must not be reconfigured.
func deniedCluster(t *testing.T, topic string) func(context.Context) (*kafka.Cluster, error) {
	t.Helper()
	cl, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic),
		kfake.EnableSASL(), kfake.EnableACLs(), kfake.Superuser("PLAIN", "admin", "admin"),
		kfake.User("PLAIN", "oncall", "pw", kfake.ACL{Resource: kmsg.ACLResourceTypeTopic, Name: topic,
			Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationDescribe, Allow: true}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return func(ctx context.Context) (*kafka.Cluster, error) {
		return kafka.Connect(ctx, config.Connection{Brokers: cl.ListenAddrs(),
			SASL: config.SASL{Mechanism: "PLAIN", Username: "oncall"}, Password: "pw"}, 10*time.Second)
	}
}
