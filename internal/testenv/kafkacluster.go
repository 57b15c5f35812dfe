package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// KafkaCluster is a Kafka cluster that `scripts/services.sh cluster` runs, whose nodes a test
// may stop, kill and start again: combined broker+controller KRaft nodes on loopback, node N
// being broker N. ServicesCluster is the three-node cluster under the services directory
// (replication factor 3, min.insync.replicas 2); StartKafkaCluster starts a private one of any
// size in a directory and on ports of one test's own (with one node, a private broker).
type KafkaCluster struct {
	t      testing.TB
	script string
	env    []string
	addrs  []string
}

// scriptTimeout bounds one call of the script: starting a node waits up to 120s for it.
const scriptTimeout = 3 * time.Minute

// ServicesCluster returns the services' three-node cluster, started if it does not run
// (idempotent: a running cluster is left as it is). At the test's cleanup every node that is
// down is started again, so that the next test finds the whole cluster. Without the services
// (scripts/services.sh start never ran) the test skips, or fails where they are Required.
func ServicesCluster(t testing.TB) *KafkaCluster {
	t.Helper()
	needKafkaJars(t)
	c := &KafkaCluster{t: t, script: filepath.Join(ModuleRoot(t), "scripts", "services.sh")}
	out := c.run("start")
	c.addrs = exportedBrokers(t, out)
	t.Cleanup(func() {
		c.logOnFailure(filepath.Join(servicesDir(), "cluster"))
		if _, err := c.script1("cluster", "start"); err != nil {
			t.Errorf("start the cluster's nodes again: %v", err)
		}
	})
	return c
}

// StartKafkaCluster starts a private cluster of nodes nodes (replication factor min(3,
// nodes), min.insync.replicas 2 from three nodes on) on free loopback ports, in a temporary
// directory. It is killed and removed at cleanup.
func StartKafkaCluster(t testing.TB, nodes int) *KafkaCluster {
	t.Helper()
	needKafkaJars(t)
	dir, err := os.MkdirTemp("", "fieldwork-kafka-")
	if err != nil {
		t.Fatal(err)
	}
	free := freePorts(t, 2*nodes)
	ports := make([]string, nodes)
	for i := range ports {
		ports[i] = strconv.Itoa(free[2*i]) + ":" + strconv.Itoa(free[2*i+1])
	}
	c := &KafkaCluster{t: t, script: filepath.Join(ModuleRoot(t), "scripts", "services.sh"),
		env: []string{"FW_CLUSTER_DIR=" + dir, "FW_CLUSTER_PORTS=" + strings.Join(ports, ",")}}
	t.Cleanup(func() {
		c.logOnFailure(dir)
		_, _ = c.script1("cluster", "kill")
		if os.Getenv("FIELDWORK_TEST_KEEP") == "" {
			_ = os.RemoveAll(dir)
		}
	})
	c.addrs = exportedBrokers(t, c.run("start"))
	return c
}

// needKafkaJars skips the test, or fails it where the services are Required, when the jars
// scripts/services.sh start fetches are not there: no Kafka can start.
func needKafkaJars(t testing.TB) {
	t.Helper()
	dir := servicesDir()
	jars, _ := filepath.Glob(filepath.Join(dir, "kafka", "libs", "kafka_2.13-*.jar"))
	_, javaErr := exec.LookPath("java")
	if len(jars) > 0 && javaErr == nil {
		return
	}
	Missing(t, fmt.Sprintf("no Kafka jars under %s/kafka/libs or no java", dir), "scripts/services.sh start installs both")
}

// servicesDir is where scripts/services.sh keeps the services' files.
func servicesDir() string {
	if dir := os.Getenv("FW_SERVICES_DIR"); dir != "" {
		return dir
	}
	return "/tmp/fieldwork-services"
}

// logOnFailure logs the end of every node's server log when the test failed.
func (c *KafkaCluster) logOnFailure(dir string) {
	if !c.t.Failed() {
		return
	}
	for n := 1; n <= len(c.addrs); n++ {
		log, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("node%d", n), "server.log"))
		c.t.Logf("Kafka node %d (%s), end of its server.log:\n%s", n, filepath.Join(dir, fmt.Sprintf("node%d", n)), tail(string(log), 20))
	}
}

// Brokers is the nodes' addresses, comma-separated.
func (c *KafkaCluster) Brokers() string { return strings.Join(c.addrs, ",") }

// Nodes is the number of nodes.
func (c *KafkaCluster) Nodes() int { return len(c.addrs) }

// Stop stops node n cleanly (SIGTERM) and waits for its process to exit.
func (c *KafkaCluster) Stop(n int) { c.t.Helper(); c.run("stop", strconv.Itoa(n)) }

// Kill kills node n (SIGKILL) and waits for its process to be gone.
func (c *KafkaCluster) Kill(n int) { c.t.Helper(); c.run("kill", strconv.Itoa(n)) }

// Start starts node n if it is down and waits until it answers and lists every running node.
func (c *KafkaCluster) Start(n int) { c.t.Helper(); c.run("start", strconv.Itoa(n)) }

// Restart stops node n if it runs, then starts it.
func (c *KafkaCluster) Restart(n int) { c.t.Helper(); c.run("restart", strconv.Itoa(n)) }

func (c *KafkaCluster) run(args ...string) string {
	c.t.Helper()
	out, err := c.script1(append([]string{"cluster"}, args...)...)
	if err != nil {
		c.t.Fatalf("services.sh cluster %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// script1 runs the script once, bounded, and returns its stdout; the error carries stderr.
func (c *KafkaCluster) script1(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{c.script}, args...)...)
	cmd.Env = append(os.Environ(), c.env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%w\n%s", err, stderr.String())
	}
	return string(out), nil
}

func exportedBrokers(t testing.TB, out string) []string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "export FIELDWORK_TEST_CLUSTER_BROKERS="); ok {
			return strings.Split(strings.TrimSpace(v), ",")
		}
	}
	t.Fatalf("services.sh cluster start printed no FIELDWORK_TEST_CLUSTER_BROKERS:\n%s", out)
	return nil
}

// freePorts returns n distinct loopback ports that were free: all are held open at once, so
// that none is handed out twice.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
