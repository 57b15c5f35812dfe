package groups

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fieldwork/fieldwork/internal/action"
	"github.com/fieldwork/fieldwork/internal/config"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// dlqLogLine is what the broker logs (WARN) when it cannot write a dead letter.
const dlqLogLine = "Failed to write to DLQ, proceeding to ARCHIVED regardless."

// brokerLog is the services broker's log (WARN and up).
func brokerLog() string {
	dir := os.Getenv("FW_SERVICES_DIR")
	if dir == "" {
		dir = "/tmp/fieldwork-services"
	}
	return filepath.Join(dir, "kafka", "server.log")
}

// logSize is the broker log's size now: what a test reads after.
func logSize(t *testing.T) int64 {
	t.Helper()
	fi, err := os.Stat(brokerLog())
	if err != nil {
		t.Fatalf("the broker log: %v", err)
	}
	return fi.Size()
}

// logSince is the broker log from offset from on.
func logSince(t *testing.T, from int64) string {
	t.Helper()
	b, err := os.ReadFile(brokerLog())
	if err != nil {
		t.Fatalf("the broker log: %v", err)
	}
	if int64(len(b)) < from {
		return string(b)
	}
	return string(b[from:])
}

// shareGroup configures group to start at the earliest offset with the given configs, and
// returns it.
func shareGroup(t *testing.T, cl *kgo.Client, group string, configs map[string]string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kv := map[string]string{kafka.ConfigShareAutoOffsetReset: "earliest"}
	for k, v := range configs {
		kv[k] = v
	}
	if err := kafka.SetShareGroupConfig(ctx, cl, group, kv); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = kafka.SetShareGroupConfig(ctx, cl, group, map[string]string{kafka.ConfigShareGroupDLQTopic: ""})
	})
	return group
}

// rejectRecord produces value to topic's partition 0 and a marker after it, then joins group
// as a share consumer that rejects the record and accepts the marker, as a member of a share
// group does with poison. It returns the record's offset once the broker has answered the
// acknowledgements.
func rejectRecord(t *testing.T, brokers, topic, group string, value []byte) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := testenv.ClientOn(t, brokers, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(16<<20))
	rs := p.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte("poison"), Value: value}, &kgo.Record{Topic: topic, Key: []byte("marker"), Value: []byte("marker")})
	if err := rs.FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	poison := rs[0].Record.Offset
	sc := testenv.ClientOn(t, brokers, kgo.ConsumeTopics(topic), kgo.ShareGroup(group), kgo.FetchMaxBytes(32<<20), kgo.FetchMaxPartitionBytes(32<<20))
	var rejected, marked bool
	for !marked {
		fs := sc.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("the share consumer did not get the records: rejected %v, marker %v", rejected, marked)
		}
		fs.EachRecord(func(r *kgo.Record) {
			switch string(r.Key) {
			case "poison":
				r.Ack(kgo.AckReject)
				rejected = true
			default:
				r.Ack(kgo.AckAccept)
				marked = rejected || marked
			}
		})
	}
	if err := sc.FlushAcks(ctx); err != nil {
		t.Fatalf("flush the acknowledgements: %v", err)
	}
	return poison
}

// deadLetterOf waits (bounded) for the dead letter of topic/0@offset in dlq, and returns it;
// nil when none came within the wait.
func deadLetterOf(t *testing.T, brokers, dlq, topic, group string, offset int64, within time.Duration) *kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	cl := testenv.ClientOn(t, brokers, kgo.ConsumeTopics(dlq), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(32<<20))
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		var found *kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			if testenv.Header(r, "__dlq.errors.topic") == topic && testenv.Header(r, "__dlq.errors.group") == group &&
				testenv.Header(r, "__dlq.errors.offset") == strconv.FormatInt(offset, 10) {
				found = r
			}
		})
		if found != nil {
			return found
		}
	}
}

// waitLost waits (bounded) until the broker logs, since from, that it could not write group's
// dead letter, for cause: the rejected record is archived and gone.
func waitLost(t *testing.T, from int64, group, cause string) {
	t.Helper()
	testenv.WaitUntil(t, 30*time.Second, nil, "the broker logs "+dlqLogLine+" for "+group, func() bool {
		log := logSince(t, from)
		for i := strings.Index(log, dlqLogLine); i >= 0; {
			rest := log[i+len(dlqLogLine):]
			next := strings.Index(rest, dlqLogLine)
			entry := rest
			if next >= 0 {
				entry = rest[:next]
			}
			if strings.Contains(entry, "share group: "+group+",") && strings.Contains(entry, cause) {
				return true
			}
			if next < 0 {
				return false
			}
			log, i = rest, next
		}
		return false
	})
}

// waitArchived waits (bounded) until the share group has no lag on topic/0: the broker counts
// the rejected record as done, and nothing will deliver it again.
func waitArchived(t *testing.T, c *kafka.Cluster, group, topic string) {
	t.Helper()
	var last kafka.ShareStarts
	testenv.WaitUntil(t, 30*time.Second, nil, "the share group has no lag left on the rejected record", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		starts, err := shareStartsOf(ctx, c, group)
		last = starts
		st, ok := starts[topic][0]
		return err == nil && ok && st.Lag == 0
	})
	t.Logf("share group %s: %v", group, last)
}

// checkOf runs the check of group's dead-letter path, reading topic.
func checkOf(t *testing.T, c *kafka.Cluster, group, topic string) *DeadLetterPath {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := CheckDeadLetterPath(ctx, c, group, []string{topic})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// severityOf is the severity of rule among p's findings ("" when it was not judged).
func severityOf(p *DeadLetterPath, rule string) string {
	for _, f := range p.Findings {
		if f.Rule == rule {
			return f.Severity
		}
	}
	return ""
}

func enabledDLQ(t *testing.T, name string, configs map[string]*string) string {
	t.Helper()
	cfg := map[string]*string{kafka.ConfigShareDLQTopicEnable: kmsg.StringPtr("true")}
	for k, v := range configs {
		cfg[k] = v
	}
	testenv.CreateTopic(t, name, 1, cfg)
	return name
}

// Each misconfiguration of a share group's dead-letter path is caught by the check, and left
// as it is, the broker loses the rejected record.
func TestDeadLetterPathNoTopic(t *testing.T) {
	c, cl := testenv.Cluster(t), testenv.Client(t)
	topic := testenv.Topic(t, 1, nil)
	group := shareGroup(t, cl, testenv.Name(t, "fw-share"), nil)
	p := checkOf(t, c, group, topic)
	if !p.Lost || severityOf(p, RuleTopicSet) != SeverityLoss {
		t.Fatalf("a group without a DLQ topic: %+v", p)
	}
	rejectRecord(t, testenv.Brokers(t), topic, group, []byte("poison"))
	waitArchived(t, c, group, topic)
}

func TestDeadLetterPathPrefix(t *testing.T) {
	c, cl := testenv.Cluster(t), testenv.Client(t)
	topic := testenv.Topic(t, 1, nil)
	dlq := enabledDLQ(t, testenv.Name(t, "fw-noprefix"), nil)
	group := shareGroup(t, cl, testenv.Name(t, "fw-share"), map[string]string{kafka.ConfigShareGroupDLQTopic: dlq})
	p := checkOf(t, c, group, topic)
	if !p.Lost || severityOf(p, RulePrefix) != SeverityLoss || severityOf(p, RuleTopicEnabled) != SeverityOK {
		t.Fatalf("a DLQ topic without the prefix: %+v", p)
	}
	from := logSize(t)
	at := rejectRecord(t, testenv.Brokers(t), topic, group, []byte("poison"))
	waitLost(t, from, group, "does not comply with the DLQ topic prefix")
	waitArchived(t, c, group, topic)
	if dl := deadLetterOf(t, testenv.Brokers(t), dlq, topic, group, at, 3*time.Second); dl != nil {
		t.Fatalf("a dead letter reached %s: %v", dlq, dl.Headers)
	}
}

func TestDeadLetterPathMissingTopic(t *testing.T) {
	c, cl := testenv.Cluster(t), testenv.Client(t)
	topic := testenv.Topic(t, 1, nil)
	dlq := testenv.Name(t, kafka.DefaultShareDLQPrefix+"fw-absent")
	group := shareGroup(t, cl, testenv.Name(t, "fw-share"), map[string]string{kafka.ConfigShareGroupDLQTopic: dlq})
	p := checkOf(t, c, group, topic)
	if !p.Lost || severityOf(p, RuleTopicExists) != SeverityLoss {
		t.Fatalf("a missing DLQ topic with auto-create off: %+v", p)
	}
	from := logSize(t)
	rejectRecord(t, testenv.Brokers(t), topic, group, []byte("poison"))
	waitLost(t, from, group, "DLQ topic does not exist and auto create is disabled")
	waitArchived(t, c, group, topic)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if flags, err := kafka.ShareDLQTopics(ctx, cl, dlq); err != nil || len(flags) != 0 {
		t.Fatalf("the DLQ topic %s: %v, %v (want it still missing)", dlq, flags, err)
	}
}

func TestDeadLetterPathNotEnabled(t *testing.T) {
	c, cl := testenv.Cluster(t), testenv.Client(t)
	topic := testenv.Topic(t, 1, nil)
	dlq := testenv.Name(t, kafka.DefaultShareDLQPrefix+"fw")
	testenv.CreateTopic(t, dlq, 1, nil)
	group := shareGroup(t, cl, testenv.Name(t, "fw-share"), map[string]string{kafka.ConfigShareGroupDLQTopic: dlq})
	p := checkOf(t, c, group, topic)
	if !p.Lost || severityOf(p, RuleTopicEnabled) != SeverityLoss || severityOf(p, RulePrefix) != SeverityOK {
		t.Fatalf("a DLQ topic without the enable flag: %+v", p)
	}
	from := logSize(t)
	at := rejectRecord(t, testenv.Brokers(t), topic, group, []byte("poison"))
	waitLost(t, from, group, "DLQ is not enabled on configured DLQ topic")
	waitArchived(t, c, group, topic)
	if dl := deadLetterOf(t, testenv.Brokers(t), dlq, topic, group, at, 3*time.Second); dl != nil {
		t.Fatalf("a dead letter reached %s: %v", dlq, dl.Headers)
	}
}

// Copy off: the dead letter arrives, coordinates only; the check warns and does not fail.
func TestDeadLetterPathCopyOff(t *testing.T) {
	c, cl := testenv.Cluster(t), testenv.Client(t)
	topic := testenv.Topic(t, 1, nil)
	dlq := enabledDLQ(t, testenv.Name(t, kafka.DefaultShareDLQPrefix+"fw"), nil)
	group := shareGroup(t, cl, testenv.Name(t, "fw-share"), map[string]string{kafka.ConfigShareGroupDLQTopic: dlq})
	p := checkOf(t, c, group, topic)
	if p.Lost || severityOf(p, RuleCopy) != SeverityWarning || severityOf(p, RuleTopicEnabled) != SeverityOK {
		t.Fatalf("copy off: %+v", p)
	}
	at := rejectRecord(t, testenv.Brokers(t), topic, group, []byte("poison"))
	dl := deadLetterOf(t, testenv.Brokers(t), dlq, topic, group, at, 30*time.Second)
	if dl == nil {
		t.Fatalf("no dead letter of %s/0@%d in %s", topic, at, dlq)
	}
	if dl.Key != nil || dl.Value != nil || testenv.Header(dl, "__dlq.errors.message") == "" {
		t.Fatalf("copy off: dead letter key %q value %q headers %v, want coordinates only", dl.Key, dl.Value, dl.Headers)
	}
}

// Copy on, a record larger than the DLQ topic accepts: the check warns, and the broker writes
// the dead letter without the record's key and value, with a WARN only.
func TestDeadLetterPathRecordSize(t *testing.T) {
	c, cl := testenv.Cluster(t), testenv.Client(t)
	topic := testenv.Topic(t, 1, nil)
	dlq := enabledDLQ(t, testenv.Name(t, kafka.DefaultShareDLQPrefix+"fw"), map[string]*string{"max.message.bytes": kmsg.StringPtr("2048")})
	group := shareGroup(t, cl, testenv.Name(t, "fw-share"), map[string]string{kafka.ConfigShareGroupDLQTopic: dlq, kafka.ConfigShareGroupDLQCopy: "true"})
	p := checkOf(t, c, group, topic)
	if severityOf(p, RuleRecordSize) != SeverityWarning || severityOf(p, RuleCopy) != SeverityOK {
		t.Fatalf("a DLQ topic smaller than the source's records: %+v", p)
	}
	from := logSize(t)
	big := bytes.Repeat([]byte("x"), 8192)
	at := rejectRecord(t, testenv.Brokers(t), topic, group, big)
	dl := deadLetterOf(t, testenv.Brokers(t), dlq, topic, group, at, 30*time.Second)
	if dl == nil {
		t.Fatalf("no dead letter of %s/0@%d in %s", topic, at, dlq)
	}
	if dl.Key != nil || dl.Value != nil {
		t.Fatalf("the record larger than %s accepts reached it with key %q and %d bytes of value", dlq, dl.Key, len(dl.Value))
	}
	testenv.WaitUntil(t, 30*time.Second, nil, "the broker's WARN of the skipped batch", func() bool {
		log := logSince(t, from)
		return strings.Contains(log, "groupId="+group+",") && strings.Contains(log, "byte budget on its own")
	})
}

// A path set right: the check finds nothing wrong, and the dead letter carries the record.
func TestDeadLetterPathWhole(t *testing.T) {
	c, cl := testenv.Cluster(t), testenv.Client(t)
	topic := testenv.Topic(t, 1, nil)
	dlq := enabledDLQ(t, testenv.Name(t, kafka.DefaultShareDLQPrefix+"fw"), nil)
	group := shareGroup(t, cl, testenv.Name(t, "fw-share"), map[string]string{kafka.ConfigShareGroupDLQTopic: dlq, kafka.ConfigShareGroupDLQCopy: "true"})
	p := checkOf(t, c, group, topic)
	for _, f := range p.Findings {
		if f.Severity != SeverityOK {
			t.Fatalf("a path set right: %+v", p)
		}
	}
	at := rejectRecord(t, testenv.Brokers(t), topic, group, []byte("poison"))
	if dl := deadLetterOf(t, testenv.Brokers(t), dlq, topic, group, at, 30*time.Second); dl == nil || string(dl.Value) != "poison" {
		t.Fatalf("dead letter %v, want the record copied", dl)
	}
}

// consumeAll joins group as a share consumer of topic, accepts records until it has n, and
// leaves the group; it returns once the group has no members.
func consumeAll(t *testing.T, c *kafka.Cluster, topic, group string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sc, err := kgo.NewClient(kgo.SeedBrokers(testenv.Brokers(t)), kgo.ConsumeTopics(topic), kgo.ShareGroup(group))
	if err != nil {
		t.Fatal(err)
	}
	for got := 0; got < n; {
		fs := sc.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("share consumer: %d of %d records", got, n)
		}
		fs.EachRecord(func(r *kgo.Record) { r.Ack(kgo.AckAccept); got++ })
	}
	if err := sc.FlushAcks(ctx); err != nil {
		t.Fatal(err)
	}
	// A member that is still in the group refuses a reset: the refusal names it.
	if _, err := PlanReset(ctx, c, ResetOptions{Group: group, Topics: []string{topic}, Target: ResetTarget{To: ResetEarliest}}); !errors.Is(err, ErrActive) {
		t.Fatalf("a reset while the share group has a member: %v", err)
	}
	sc.Close()
	testenv.WaitUntil(t, 30*time.Second, nil, "the share group empties", func() bool {
		d, err := describe(ctx, c, group)
		return err == nil && d.Type == TypeShare && len(d.Members) == 0
	})
}

// startsNow are group's start offsets on topic.
func startsNow(t *testing.T, c *kafka.Cluster, group, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := shareStartsOf(ctx, c, group)
	if err != nil {
		t.Fatal(err)
	}
	return s.Commits()[topic]
}

// A share group's start offsets are reset like a consumer group's commits: planned (refused
// while it has members), executed, journaled, undone; an undo of a reset that started a topic
// the group had no offsets on deletes them again.
func TestShareGroupReset(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, cl, st := testenv.Cluster(t), testenv.Client(t), testenv.SQLiteStore(t)
	topic := testenv.Topic(t, 2, nil)
	p := testenv.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for part := range int32(2) {
		for i := range 6 {
			testenv.Produce(t, p, &kgo.Record{Topic: topic, Partition: part, Value: []byte(strconv.Itoa(i))})
		}
	}
	group := shareGroup(t, cl, testenv.Name(t, "fw-share"), nil)
	consumeAll(t, c, topic, group, 12)

	env := &action.Env{Options: action.Options{Execute: true, Yes: true, Record: action.NewRecord(time.Now(), "tester", os.Getenv, "INC-28")}}
	two := int64(2)
	out, err := action.Run(ctx, Reset(c, st, ResetOptions{Group: group, Topics: []string{topic}, Target: ResetTarget{To: ResetOffset, Offset: &two}}), env.Options, action.Hooks[*ResetPlan]{})
	if err != nil || out.Stage != action.StageExecute || out.Plan.Type != TypeShare || len(out.Plan.Partitions) != 2 {
		t.Fatalf("reset: %+v, %v", out, err)
	}
	before := map[int32]*int64{}
	for _, rp := range out.Plan.Partitions {
		before[rp.Partition] = rp.Committed
	}
	if got := startsNow(t, c, group, topic); got[0] != 2 || got[1] != 2 {
		t.Fatalf("start offsets after the reset: %v, want 2 and 2", got)
	}
	js, err := st.GroupActions(ctx, 0)
	if err != nil || len(js) != 1 || js[0].Action != "reset" || js[0].Group != group || js[0].Reason != "INC-28" {
		t.Fatalf("journal: %+v, %v", js, err)
	}

	env.Record = action.NewRecord(time.Now(), "tester", os.Getenv, "undo INC-28")
	if _, err := action.Run(ctx, Undo(c, st, js[0].ID), env.Options, action.Hooks[*UndoPlan]{}); err != nil {
		t.Fatalf("undo: %v", err)
	}
	got := startsNow(t, c, group, topic)
	for part, at := range before {
		if now, ok := got[part]; at == nil && ok || at != nil && (!ok || now != *at) {
			t.Fatalf("after the undo, partition %d starts at %v (present %v), want %s", part, now, ok, OffsetText(at))
		}
	}

	// No offsets on the topic: the reset starts it, the undo deletes the offsets again.
	if err := c.DeleteShareGroupStarts(ctx, group, topic); err != nil {
		t.Fatal(err)
	}
	env.Record = action.NewRecord(time.Now(), "tester", os.Getenv, "INC-28 again")
	out, err = action.Run(ctx, Reset(c, st, ResetOptions{Group: group, Topics: []string{topic}, Target: ResetTarget{To: ResetLatest}}), env.Options, action.Hooks[*ResetPlan]{})
	if err != nil || out.Plan.Partitions[0].Committed != nil {
		t.Fatalf("reset of a topic without offsets: %+v, %v", out, err)
	}
	if got := startsNow(t, c, group, topic); got[0] != 6 || got[1] != 6 {
		t.Fatalf("start offsets after the reset to the latest: %v", got)
	}
	env.Record = action.NewRecord(time.Now(), "tester", os.Getenv, "undo again")
	if _, err := action.Run(ctx, Undo(c, st, out.Result.ID), env.Options, action.Hooks[*UndoPlan]{}); err != nil {
		t.Fatalf("undo: %v", err)
	}
	if got := startsNow(t, c, group, topic); len(got) != 0 {
		t.Fatalf("after the undo of a reset that started the topic: %v, want no offsets", got)
	}
}

// share.version below 2: the check says the record is lost, and on a broker at level 1 a
// rejected record is archived with no dead letter, even with every other rule holding. The
// shared broker cannot be lowered: a private one is, with UpdateFeatures.
func TestDeadLetterPathShareVersion(t *testing.T) {
	k := testenv.StartPrivateKafka(t, nil)
	cl := k.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := kadm.NewClient(cl).UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: kafka.FeatureShareVersion, MaxVersionLevel: 1, UpgradeType: 2})
	if err == nil {
		err = resp[kafka.FeatureShareVersion].Err
	}
	if err != nil {
		t.Fatalf("lower share.version to 1: %v", err)
	}
	testenv.WaitUntil(t, 30*time.Second, nil, "share.version 1", func() bool {
		c, err := kafka.ReadShareDLQCluster(ctx, cl)
		return err == nil && c.ShareVersion == 1
	})
	c, err := kafka.Connect(ctx, config.Connection{Brokers: []string{k.Brokers()}}, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	topic, dlq := testenv.Name(t, "fw"), testenv.Name(t, kafka.DefaultShareDLQPrefix+"fw")
	testenv.CreateTopicWith(t, cl, topic, 1, 1, nil)
	testenv.CreateTopicWith(t, cl, dlq, 1, 1, map[string]*string{kafka.ConfigShareDLQTopicEnable: kmsg.StringPtr("true")})
	group := shareGroup(t, cl, testenv.Name(t, "fw-share"), map[string]string{kafka.ConfigShareGroupDLQTopic: dlq, kafka.ConfigShareGroupDLQCopy: "true"})
	p := checkOf(t, c, group, topic)
	if !p.Lost || severityOf(p, RuleShareVersion) != SeverityLoss || severityOf(p, RuleTopicEnabled) != SeverityOK {
		t.Fatalf("share.version 1: %+v", p)
	}
	at := rejectRecord(t, k.Brokers(), topic, group, []byte("poison"))
	waitArchived(t, c, group, topic)
	if dl := deadLetterOf(t, k.Brokers(), dlq, topic, group, at, 5*time.Second); dl != nil {
		t.Fatalf("a dead letter reached %s at share.version 1: %v", dlq, dl.Headers)
	}
}
