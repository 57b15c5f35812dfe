package processed

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fieldwork/fieldwork/internal/action"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/timespec"
	"github.com/fieldwork/fieldwork/internal/wording"
)

// PruneOptions configure Prune.
type PruneOptions struct {
	// OlderThan is the window: markers processed more than this long before Now are deleted.
	// Required, positive.
	OlderThan time.Duration
	// Consumer limits the pruning to one consumer's markers ("" for every consumer's).
	Consumer string
	// BatchSize is the markers deleted per transaction (dedup.DefaultPruneBatch when 0).
	BatchSize int
	// Topics, when given, are the source topics whose retention bounds the replay horizon,
	// in place of the topics the markers recorded.
	Topics []string
	// Force prunes even inside a replay horizon, or without checking it; each thing it did
	// not respect is a warning of the action (action.Env.Warn).
	Force bool
	// Now anchors the window (time.Now when zero).
	Now time.Time
}

// TopicHorizon is one source topic's replay horizon as Prune checked it.
type TopicHorizon struct {
	Topic string `json:"topic"`
	// Markers is how many of the markers to delete recorded this topic.
	Markers       int64  `json:"markers"`
	RetentionMs   *int64 `json:"retention_ms,omitempty"`
	CleanupPolicy string `json:"cleanup_policy,omitempty"`
	// Horizon is the retention as a duration (timespec.Format), "forever", or "unknown" when
	// not checked or not known.
	Horizon string `json:"replay_horizon"`
	// Problem says why pruning this window is unsafe for the topic; empty when it is safe.
	Problem string `json:"problem,omitempty"`
}

// PruneReport is what `processed prune` prints.
type PruneReport struct {
	Table           string    `json:"table"`
	Consumer        string    `json:"consumer,omitempty"`
	OlderThan       string    `json:"older_than"`
	ProcessedBefore time.Time `json:"processed_before"`
	Candidates      int64     `json:"candidates"`
	// NoTopic counts the candidates that recorded no source topic (NULL).
	NoTopic int64 `json:"candidates_without_topic"`
	Deleted int64 `json:"deleted"`
	// HorizonChecked is set when the source topics' retention was read from Kafka.
	HorizonChecked bool           `json:"horizon_checked"`
	Forced         bool           `json:"forced"`
	Topics         []TopicHorizon `json:"topics"`
	// DryRun is set when nothing was deleted because none was asked for: Candidates would be.
	DryRun bool `json:"dry_run"`
	// Reason is the --reason the prune is asked with (nil without one).
	Reason *string `json:"reason"`
}

// Prune is the deletion of the markers processed more than o.OlderThan ago (o.Consumer's only,
// when set) as an action (action.Run), unless a replay could still deliver their events: the
// replay-horizon policy.
//
// Its plan counts the candidates per recorded source topic; with none it is all (nothing is
// asked of Kafka, and an executed prune ends there: action.ErrNothingToDo). Otherwise it
// reads the retention of the source topics (o.Topics, or the topics the candidates recorded)
// through cluster, which is called only then, and refuses with a usage error, one reason per
// topic, when o.OlderThan is shorter than a topic's retention, when a topic keeps its records
// forever, when its retention is unknown (DescribeConfigs denied, not reported, no such
// topic), or when candidates recorded no topic and o.Topics is empty. A cluster that cannot be
// had (none configured, unreachable) fails the plan with that error. o.Force turns each of
// these into a warning. The plan is returned with every error after the candidates were
// counted.
//
// An executed prune checks that its journal can be written (journalReady), is confirmed, and
// deletes the markers in batches of o.BatchSize, each its own transaction (progress: the
// markers deleted of the candidates), and is journaled under the action's Record, also when it
// failed part way; Deleted then says how many markers are gone.
func Prune(st *dedup.Store, cluster func(context.Context) (*kafka.Cluster, error), o PruneOptions) action.Steps[*PruneReport, *PruneReport] {
	return action.Steps[*PruneReport, *PruneReport]{
		Plan: func(ctx context.Context, e *action.Env) (*PruneReport, error) {
			return planPrune(ctx, st, cluster, o, e)
		},
		Check: func(ctx context.Context, _ *action.Env, rep *PruneReport) error {
			if rep.Candidates == 0 {
				return action.ErrNothingToDo
			}
			return journalReady(ctx, st)
		},
		Execute: func(ctx context.Context, e *action.Env, rep *PruneReport) (*PruneReport, error) {
			e.Progress(action.Progress{Stage: "prune", Total: rep.Candidates})
			var progress func(int64)
			if e.Reports() {
				progress = func(n int64) { e.Progress(action.Progress{Stage: "prune", Done: n, Total: rep.Candidates}) }
			}
			var err error
			rep.Deleted, err = st.Prune(ctx, o.Consumer, rep.ProcessedBefore, o.BatchSize, progress)
			if errors.Is(err, context.Canceled) {
				// Stopped by SIGINT or SIGTERM: journaled as that, not as "context canceled".
				err = fwerr.Wrap(fwerr.KindInterrupted, fmt.Errorf("interrupted after %s", wording.Plural(rep.Deleted, "marker")))
			}
			if err != nil && rep.Deleted == 0 {
				return rep, err
			}
			return rep, recordPrune(context.WithoutCancel(ctx), st, o, e.Record, rep, err)
		},
	}
}

// Question is what the person who prunes is asked, completing "refusing to …".
func (r *PruneReport) Question() string {
	return fmt.Sprintf("delete %s%s processed before %s (older than %s) from %s",
		wording.Plural(r.Candidates, "marker"), forConsumer(r.Consumer), timespec.FormatTime(r.ProcessedBefore), r.OlderThan, r.Table)
}

// planPrune is Prune's plan: the candidates counted, the horizon checked.
func planPrune(ctx context.Context, st *dedup.Store, cluster func(context.Context) (*kafka.Cluster, error), o PruneOptions, e *action.Env) (*PruneReport, error) {
	if o.OlderThan <= 0 {
		return nil, fwerr.Usagef("the pruning window %s must be positive", timespec.Format(o.OlderThan))
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	before := now.Add(-o.OlderThan).UTC()
	rep := &PruneReport{Table: st.TableLabel(), Consumer: o.Consumer, OlderThan: timespec.Format(o.OlderThan),
		ProcessedBefore: before, Forced: o.Force, Topics: []TopicHorizon{}, DryRun: !e.Execute, Reason: e.Reason()}

	// Through the store's own query first: a missing table is reported as such.
	page, err := st.List(ctx, dedup.ListFilter{Consumer: o.Consumer, Until: before, Limit: 1})
	if err != nil {
		return nil, err
	}
	if len(page.Rows) == 0 {
		return rep, nil
	}
	counts, err := st.PruneCandidates(ctx, o.Consumer, before)
	if err != nil {
		return nil, err
	}
	for _, c := range counts {
		rep.Candidates += c.Markers
	}
	return rep, checkReplayHorizon(ctx, cluster, o, e.Warn, rep, counts)
}

// checkReplayHorizon fills rep.Topics and refuses, unless forced, to prune markers that a
// replay could still need.
func checkReplayHorizon(ctx context.Context, cluster func(context.Context) (*kafka.Cluster, error), o PruneOptions, warn func(string), rep *PruneReport, counts []dedup.TopicCount) error {
	byTopic := map[string]int64{}
	for _, c := range counts {
		if c.Topic == "" {
			rep.NoTopic += c.Markers
		} else {
			byTopic[c.Topic] += c.Markers
		}
	}
	topics := slices.Clone(o.Topics)
	if len(topics) == 0 {
		for t := range byTopic {
			topics = append(topics, t)
		}
	}
	slices.Sort(topics)
	topics = slices.Compact(topics)
	for _, t := range topics {
		rep.Topics = append(rep.Topics, TopicHorizon{Topic: t, Markers: byTopic[t], Horizon: "unknown"})
	}

	var problems []string
	if rep.NoTopic > 0 && len(o.Topics) == 0 {
		problems = append(problems, fmt.Sprintf("%s recorded no source topic, so their replay horizon is unknown: name their topics with --topic",
			wording.Plural(rep.NoTopic, "marker")))
	}
	if len(topics) > 0 {
		retention, err := readRetention(ctx, cluster, topics)
		if err != nil {
			if !o.Force {
				return fmt.Errorf("cannot check the replay horizon of %s (their retention.ms): %w\nhint: point --brokers (or FIELDWORK_BROKERS) at their cluster, or pass --force to prune without this check",
					strings.Join(topics, ", "), err)
			}
			warn(fmt.Sprintf("--force: not checking the replay horizon of %s: %v", strings.Join(topics, ", "), err))
			return nil
		}
		rep.HorizonChecked = true
		var denied error
		for i := range rep.Topics {
			h := &rep.Topics[i]
			r := retention.of(h.Topic)
			*h = Horizon(*h, r, o.OlderThan)
			if h.Problem != "" {
				problems = append(problems, h.Topic+": "+h.Problem)
			}
			if r.Cause == kafka.CauseDenied && denied == nil {
				denied = fwerr.Denied(&kafka.NotAuthorizedError{Operation: kafka.OpDescribeConfigs, ResourceType: kafka.ResourceTopic, Resource: h.Topic, Err: r.Err})
			}
		}
		// A horizon the ACLs hide is a missing right, not a wrong flag (exit 5): the prune
		// needs DESCRIBE_CONFIGS on every source topic, or --force.
		if denied != nil && !o.Force {
			return fmt.Errorf("%w\ncannot check the replay horizon of %s without it: grant DESCRIBE_CONFIGS on the source topics, or pass --force to prune without this check",
				denied, strings.Join(topics, ", "))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	if o.Force {
		for _, p := range problems {
			warn("--force: pruning anyway: " + p)
		}
		return nil
	}
	return fwerr.Usagef("refusing to prune markers older than %s: a replay could still deliver their events, and an event replayed after its marker is gone is processed a second time:\n  %s\nchoose a longer --older-than, or pass --force if no replay can reach these events",
		rep.OlderThan, strings.Join(problems, "\n  "))
}

// clusterRetention is the retention of the topics asked for, and the brokers that said so.
type clusterRetention struct {
	byTopic map[string]kafka.Retention
	brokers []string
}

func (r clusterRetention) of(topic string) kafka.Retention {
	ret := r.byTopic[topic]
	if ret.Cause == kafka.CauseNoTopic {
		ret.Why = fmt.Sprintf("the topic does not exist on %s (the wrong cluster?), so its horizon is unknown", strings.Join(r.brokers, ","))
	}
	return ret
}

func readRetention(ctx context.Context, cluster func(context.Context) (*kafka.Cluster, error), topics []string) (clusterRetention, error) {
	if cluster == nil {
		return clusterRetention{}, fwerr.Wrap(fwerr.KindUsage, kafka.ErrNoBrokers)
	}
	c, err := cluster(ctx)
	if err != nil {
		return clusterRetention{}, err
	}
	defer c.Close()
	byTopic, err := c.Retention(ctx, topics)
	if err != nil {
		return clusterRetention{}, err
	}
	return clusterRetention{byTopic: byTopic, brokers: c.Brokers}, nil
}

// Horizon is the policy for one source topic: h (its topic and markers) with what its
// retention r says — the horizon, and a problem when pruning markers older than olderThan is
// unsafe: a known retention longer than olderThan, a topic that keeps records forever, or a
// retention that is not known. A known retention no longer than olderThan is safe.
func Horizon(h TopicHorizon, r kafka.Retention, olderThan time.Duration) TopicHorizon {
	h.RetentionMs, h.CleanupPolicy, h.Horizon, h.Problem = r.Ms, r.CleanupPolicy, "unknown", ""
	switch r.State {
	case kafka.RetentionForever:
		h.Horizon = "forever"
		if r.Compacted() && !slices.Contains(strings.Split(r.CleanupPolicy, ","), "delete") {
			h.Problem = "cleanup.policy is compact: the latest record of every key is kept forever and can be replayed"
		} else {
			h.Problem = "retention.ms is -1: the topic keeps its records forever and any of them can be replayed"
		}
	case kafka.RetentionKnown:
		h.Horizon = timespec.Format(r.Horizon)
		if !PastHorizon(r, olderThan) {
			h.Problem = fmt.Sprintf("retention.ms %d (%s) is longer than --older-than %s: use --older-than %s or more",
				*r.Ms, h.Horizon, timespec.Format(olderThan), h.Horizon)
		}
	default:
		why := r.Why
		if why == "" {
			why = "its retention is unknown"
		}
		h.Problem = why
	}
	return h
}

// PastHorizon reports whether the markers of events processed age ago, from a topic of
// retention r, may already be pruned under the replay-horizon policy (Horizon): a prune of
// markers older than age is one the policy lets through. A replay of such an event may then
// meet no marker, and be processed a second time. Only a known retention says so; a topic
// kept forever, or of unknown retention, never lets a prune through.
//
// It is the policy's one rule, which Horizon explains (and a replay's guard asks per record,
// without building the explanation): a prune of markers older than age is safe only on a topic
// of known retention no longer than age.
func PastHorizon(r kafka.Retention, age time.Duration) bool {
	return r.State == kafka.RetentionKnown && age >= r.Horizon
}

func forConsumer(c string) string {
	if c == "" {
		return ""
	}
	return " of consumer " + c
}
