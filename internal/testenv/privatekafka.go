package testenv

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// PrivateKafka is an Apache Kafka broker of one test's own (single-node KRaft, broker and
// controller in one process), run from the jars scripts/services.sh installed, so that the
// test may stop, kill and restart it without disturbing the shared broker. It has its own
// ports on loopback and its own data directory, which survive Stop and Kill: Start brings
// the same broker back with its topics, offsets and groups. Its methods that can fail the
// test (Start, Stop, Kill) must be called from the test's goroutine.
type PrivateKafka struct {
	t      testing.TB
	libs   string
	dir    string
	port   int
	cport  int // the controller's
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited
}

// privateKafkaDefaults are the server properties of a private broker, beside listeners,
// node id and log directory. A test broker: one replica of everything, no delay before the
// first rebalance, few partitions for the internal topics so that it starts quickly.
var privateKafkaDefaults = map[string]string{
	"process.roles":                                    "broker,controller",
	"node.id":                                          "1",
	"controller.listener.names":                        "CONTROLLER",
	"inter.broker.listener.name":                       "PLAINTEXT",
	"listener.security.protocol.map":                   "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
	"num.partitions":                                   "1",
	"auto.create.topics.enable":                        "false",
	"offsets.topic.replication.factor":                 "1",
	"offsets.topic.num.partitions":                     "4",
	"transaction.state.log.replication.factor":         "1",
	"transaction.state.log.min.isr":                    "1",
	"transaction.state.log.num.partitions":             "4",
	"share.coordinator.state.topic.replication.factor": "1",
	"share.coordinator.state.topic.min.isr":            "1",
	"group.initial.rebalance.delay.ms":                 "0",
}

// The JVM's options when KAFKA_HEAP_OPTS and KAFKA_JVM_PERFORMANCE_OPTS are unset (the
// variables Kafka's own start script reads): a small heap, and a quick start rather than
// peak throughput, on a machine that runs many tests at once.
const (
	privateKafkaHeap = "-Xms128m -Xmx512m"
	privateKafkaJVM  = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true"
)

// StartPrivateKafka formats a data directory and starts a broker on free loopback ports,
// waiting until it answers; it is killed and its directory removed at cleanup (kept with
// FIELDWORK_TEST_KEEP set). config adds or overrides server properties (say
// "message.max.bytes"). The jars come from ${FW_SERVICES_DIR:-/tmp/fieldwork-services}/kafka/libs;
// without them, or without java, the test skips, except under CI or FIELDWORK_TEST_REQUIRE=1,
// where it fails.
func StartPrivateKafka(t testing.TB, config map[string]string) *PrivateKafka {
	t.Helper()
	needKafkaJars(t)
	libs := filepath.Join(servicesDir(), "kafka", "libs")
	dir, err := os.MkdirTemp("", "fieldwork-kafka-")
	if err != nil {
		t.Fatal(err)
	}
	k := &PrivateKafka{t: t, libs: libs, dir: dir}
	t.Cleanup(func() {
		k.kill()
		if os.Getenv("FIELDWORK_TEST_KEEP") != "" {
			t.Logf("kept the private Kafka's directory %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	k.port, k.cport = freePort(t), freePort(t)

	props := maps.Clone(privateKafkaDefaults)
	props["listeners"] = fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", k.port, k.cport)
	props["advertised.listeners"] = fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", k.port)
	props["controller.quorum.voters"] = fmt.Sprintf("1@127.0.0.1:%d", k.cport)
	props["log.dirs"] = filepath.Join(dir, "data")
	maps.Copy(props, config)
	var b strings.Builder
	for _, key := range slices.Sorted(maps.Keys(props)) {
		fmt.Fprintf(&b, "%s=%s\n", key, props[key])
	}
	k.write("server.properties", b.String())
	k.write("log4j2.properties", strings.Join([]string{
		"status = warn",
		"appender.file.type = File",
		"appender.file.name = file",
		"appender.file.fileName = " + filepath.Join(dir, "server.log"),
		"appender.file.layout.type = PatternLayout",
		"appender.file.layout.pattern = [%d] %p %m (%c)%n",
		"rootLogger.level = warn",
		"rootLogger.appenderRef.file.ref = file",
	}, "\n")+"\n")
	out, err := k.java("kafka.tools.StorageTool", "format", "-t", clusterID(t), "-c", filepath.Join(dir, "server.properties")).CombinedOutput()
	if err != nil {
		t.Fatalf("format the private Kafka's storage: %v\n%s", err, out)
	}
	k.Start()
	return k
}

// Brokers is the broker's address.
func (k *PrivateKafka) Brokers() string { return fmt.Sprintf("127.0.0.1:%d", k.port) }

// Client returns a franz-go client of the broker, closed at cleanup.
func (k *PrivateKafka) Client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(k.Brokers())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Start starts the broker (again, after Stop or Kill) and waits, up to two minutes, until it
// answers a metadata request with itself and its controller.
func (k *PrivateKafka) Start() {
	k.t.Helper()
	if k.running() {
		k.t.Fatal("private Kafka: Start while it runs")
	}
	logf, err := os.OpenFile(filepath.Join(k.dir, "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		k.t.Fatal(err)
	}
	cmd := k.java("kafka.Kafka", filepath.Join(k.dir, "server.properties"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		k.t.Fatalf("start private Kafka: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(exited)
	}()
	k.cmd, k.exited = cmd, exited

	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers()), kgo.DialTimeout(time.Second))
	if err != nil {
		k.t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		md, err := adm.BrokerMetadata(ctx)
		cancel()
		if err == nil && len(md.Brokers) > 0 && md.Controller >= 0 {
			return
		}
		select {
		case <-exited:
			k.t.Fatalf("private Kafka exited while starting\n%s", k.logTail())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			k.kill()
			k.t.Fatalf("private Kafka did not answer within 2 minutes: %v\n%s", err, k.logTail())
		}
	}
}

// Stop shuts the broker down the way an operator does (SIGTERM: a controlled shutdown) and
// waits for it to exit; past a minute it is killed.
func (k *PrivateKafka) Stop() {
	k.t.Helper()
	if !k.running() {
		k.t.Fatal("private Kafka: Stop while it does not run")
	}
	_ = k.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-k.exited:
	case <-time.After(time.Minute):
		k.kill()
		k.t.Fatalf("private Kafka did not stop within a minute of SIGTERM (killed)\n%s", k.logTail())
	}
}

// Kill ends the broker at once (SIGKILL), as a crash or a lost machine does.
func (k *PrivateKafka) Kill() {
	k.t.Helper()
	if !k.running() {
		k.t.Fatal("private Kafka: Kill while it does not run")
	}
	k.kill()
}

func (k *PrivateKafka) kill() {
	if k.running() {
		_ = k.cmd.Process.Kill()
		<-k.exited
	}
}

func (k *PrivateKafka) running() bool {
	if k.cmd == nil {
		return false
	}
	select {
	case <-k.exited:
		return false
	default:
		return true
	}
}

// java is a command running class main of the Kafka jars.
func (k *PrivateKafka) java(main string, args ...string) *exec.Cmd {
	opts := strings.Fields(envOr("KAFKA_HEAP_OPTS", privateKafkaHeap))
	opts = append(opts, strings.Fields(envOr("KAFKA_JVM_PERFORMANCE_OPTS", privateKafkaJVM))...)
	opts = append(opts, "-Dlog4j2.configurationFile="+filepath.Join(k.dir, "log4j2.properties"),
		"-cp", filepath.Join(k.libs, "*"), main)
	return exec.Command("java", append(opts, args...)...)
}

func (k *PrivateKafka) write(name, content string) {
	if err := os.WriteFile(filepath.Join(k.dir, name), []byte(content), 0o644); err != nil {
		k.t.Fatal(err)
	}
}

// logTail is the end of the broker's logs, for a failure message.
func (k *PrivateKafka) logTail() string {
	var b strings.Builder
	for _, name := range []string{"stdout.log", "server.log"} {
		data, _ := os.ReadFile(filepath.Join(k.dir, name))
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		fmt.Fprintf(&b, "--- %s\n%s\n", name, strings.Join(lines[max(0, len(lines)-30):], "\n"))
	}
	return b.String()
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// freePort is a loopback port nobody listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// clusterID is a new KRaft cluster id: 16 random bytes in URL-safe base64 without padding,
// as Kafka writes a Uuid (one that starts with "-" is refused on the command line).
func clusterID(t testing.TB) string {
	for {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			t.Fatal(err)
		}
		if id := base64.RawURLEncoding.EncodeToString(b[:]); id[0] != '-' {
			return id
		}
	}
}
