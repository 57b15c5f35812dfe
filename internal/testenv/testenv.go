// Package testenv gives integration tests the real services started by scripts/services.sh.
//
// Tests read FIELDWORK_TEST_BROKERS, FIELDWORK_TEST_SASL_BROKERS and FIELDWORK_TEST_DSN. When
// a variable is unset a test skips, except under CI (CI=true) or FIELDWORK_TEST_REQUIRE=1,
// where it fails: in CI a test that cannot reach its service never passes silently.
//
// It is the one place of the helpers every package's tests share: topics on the real broker
// (CreateTopic, Topic), a private PostgreSQL (StartPrivatePostgres), and the testscript
// harness (ScriptMain, ScriptParams). Golden files are compared by the subpackage golden,
// which defines the -update flag.
package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Required reports whether the services must be there: under CI (CI set) or with
// FIELDWORK_TEST_REQUIRE=1 a test that lacks one fails instead of skipping.
func Required() bool {
	return os.Getenv("CI") != "" || os.Getenv("FIELDWORK_TEST_REQUIRE") == "1"
}

// Missing ends a test that lacks something the services provide: it fails where the services
// are Required, saying what is missing and how to get it (hint), and skips elsewhere.
func Missing(t testing.TB, what, hint string) {
	t.Helper()
	if Required() {
		t.Fatalf("%s: %s", what, hint)
	}
	t.Skip(what)
}

// Kcat returns kcat's path, the independent client of the interop tests; without it the test
// skips, or fails where the services are Required.
func Kcat(t testing.TB) string {
	t.Helper()
	return Tool(t, "kcat")
}

// Tool returns the path of name (a command on PATH, or a path), one of the tools
// scripts/services.sh installs; without it the test skips, or fails where the services are
// Required.
func Tool(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		Missing(t, name+" is not installed", "run scripts/services.sh start")
	}
	return path
}

func need(t testing.TB, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		Missing(t, name+" is not set", "start the services with scripts/services.sh start and export what it prints")
	}
	return v
}

// SpringClasspath returns the Java classpath of Spring Kafka's jars (scripts/spring/pom.xml),
// which scripts/services.sh start fetches; without them the test skips, or fails where the
// services are Required.
func SpringClasspath(t testing.TB) string {
	t.Helper()
	cp := need(t, "FIELDWORK_TEST_SPRING_CLASSPATH")
	if jars, _ := filepath.Glob(filepath.Join(filepath.Dir(cp), "spring-kafka-*.jar")); len(jars) == 0 {
		Missing(t, "no Spring Kafka jar in "+filepath.Dir(cp), "run scripts/services.sh start (or spring-classpath)")
	}
	return cp
}

// Python returns the python of the virtualenv scripts/services.sh start makes
// (FIELDWORK_TEST_PYTHON: scripts/python/requirements.txt installed, Confluent's Python client
// among them); without it the test skips, or fails where the services are Required.
func Python(t testing.TB) string {
	t.Helper()
	py := need(t, "FIELDWORK_TEST_PYTHON")
	if _, err := os.Stat(py); err != nil {
		Missing(t, "no Python virtualenv at "+py, "run scripts/services.sh start (or scripts/services.sh python)")
	}
	return py
}

// Brokers returns the real Kafka broker's address.
func Brokers(t testing.TB) string { t.Helper(); return need(t, "FIELDWORK_TEST_BROKERS") }

// SASLBrokers returns the broker's SASL_PLAINTEXT listener and its user and password.
func SASLBrokers(t testing.TB) (addr, user, password string) {
	t.Helper()
	return need(t, "FIELDWORK_TEST_SASL_BROKERS"), need(t, "FIELDWORK_TEST_SASL_USER"), need(t, "FIELDWORK_TEST_SASL_PASSWORD")
}

// DSN returns the real PostgreSQL's connection string.
func DSN(t testing.TB) string { t.Helper(); return need(t, "FIELDWORK_TEST_DSN") }

var seq atomic.Int64

var unsafe = regexp.MustCompile(`[^a-zA-Z0-9._-]+`)

// Name returns a name unique to this test run, usable as a topic or group name.
func Name(t testing.TB, prefix string) string {
	base := unsafe.ReplaceAllString(strings.ToLower(t.Name()), "-")
	if len(base) > 60 {
		base = base[:60]
	}
	return fmt.Sprintf("%s-%s-%d-%d", prefix, base, time.Now().UnixNano()%1_000_000_000, seq.Add(1))
}

// Header is the value of r's first header named key, "" when it has none.
func Header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// Client returns a franz-go client on the real broker, closed at cleanup.
func Client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(Brokers(t))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Topic creates a topic of a name unique to the test (Name) with the given partitions and
// configs, as CreateTopic does, and returns its name.
func Topic(t testing.TB, partitions int32, configs map[string]*string) string {
	t.Helper()
	name := Name(t, "fw")
	CreateTopic(t, name, partitions, configs)
	return name
}

// Produce writes records synchronously to the real broker, failing the test on error.
func Produce(t testing.TB, cl *kgo.Client, recs ...*kgo.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}
