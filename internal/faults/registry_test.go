package faults_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/sample"
	"github.com/fieldwork/fieldwork/internal/testenv"
	"github.com/fieldwork/fieldwork/internal/testenv/invariant"
)

// traceField is the field the sample schema's second version adds.
const traceField = `{"name":"trace_id","type":["null","string"],"default":null}`

// avroStream rewrites the sample stream's values as Avro in the Confluent wire format: the
// records before half with schema id v1, the rest with v2. A poison value that is not JSON
// becomes framed bytes that are not Avro (a mismatch: malformed), except the first, which
// names unknownID, a schema the registry does not know (unsupported). Headers are dropped: a
// registry-framed value says what it is. Byte-equal duplicates stay byte-equal.
func avroStream(t *testing.T, s *stream, half, v1, v2, unknownID int) (unknownAt int) {
	t.Helper()
	sch1, sch2 := avro.MustParse(sample.AvroSchema), avro.MustParse(sample.AvroSchemaWith(traceField))
	unknownAt = -1
	for i, r := range s.recs {
		id, sch := v1, sch1
		if i >= half {
			id, sch = v2, sch2
		}
		b, ok, err := sample.AvroValue(sch, r.Value)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if !ok {
			b = []byte{0xff, 0xff, 0xff, 0x01} // not Avro of the schema
			if unknownAt < 0 {
				unknownAt, id = i, unknownID
			}
		}
		out, _ := new(sr.ConfluentHeader).AppendEncode(nil, id, nil)
		r.Value, r.Headers = append(out, b...), nil
	}
	return unknownAt
}

// registryGate is a proxy to the real schema registry that answers 503 while it is down.
type registryGate struct {
	url     string
	down    atomic.Bool
	refused atomic.Int64 // requests answered 503
}

func newRegistryGate(t *testing.T, target string) *registryGate {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	g := &registryGate{}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.down.Load() {
			g.refused.Add(1)
			http.Error(w, `{"error_code":50003,"message":"registry unavailable"}`, http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	g.url = srv.URL + u.Path
	return g
}

// TestAvroStreamThroughRegistryOutage: `fieldwork consume` on the sample stream (duplicates,
// stale versions, poison) written in Avro through the real schema registry. Mid-run the
// producers move to a new schema version while the registry does not answer the consumer:
// it waits (warnings, no dead letter), and once the registry is back goes on. The crash
// tests' invariant: every event's effect exactly once, every poison record dead-lettered and
// nothing else, the consumer exits 0; the value whose schema id is unknown is unsupported.
func TestAvroStreamThroughRegistryOutage(t *testing.T) {
	regURL, user, pw := testenv.SchemaRegistry(t)
	w := newWorld(t, testenv.Brokers(t), 1, testenv.DSN(t))
	s := w.newStream(3, sample.Options{Seed: 616, Aggregates: 150, EventsPerAggregate: 6, DuplicateFraction: 0.05, Stale: 12, Poison: 9})
	cl := testenv.RegistryClient(t)
	subject := s.topic + "-value"
	reg := func(text string) int {
		ss, err := cl.CreateSchema(t.Context(), subject, sr.Schema{Schema: text, Type: sr.TypeAvro})
		if err != nil {
			t.Fatal(err)
		}
		return ss.ID
	}
	v1, v2 := reg(sample.AvroSchema), reg(sample.AvroSchemaWith(traceField))
	half := len(s.recs) / 2
	unknownAt := avroStream(t, s, half, v1, v2, 987654320)
	if unknownAt < 0 {
		t.Fatal("the stream has no poison value to give an unknown schema id")
	}

	gate := newRegistryGate(t, regURL)
	pwFile := filepath.Join(t.TempDir(), "registry-password")
	if err := os.WriteFile(pwFile, []byte(pw), 0o600); err != nil {
		t.Fatal(err)
	}
	w.consumeArgs = []string{"--schema-registry", gate.url, "--schema-registry-username", user, "--schema-registry-password-file", pwFile}
	report := w.consumeThroughFault(s, fault{
		brokerStays: true,
		down: func() string {
			gate.down.Store(true)
			return "schema registry answering 503, the second half produced with a new schema version meanwhile"
		},
		up: func() string {
			// The consumer met the outage: the new schema version was asked for and refused.
			waitFor(t, time.Minute, nil, "the consumer asking the registry while it is down", func() bool { return gate.refused.Load() > 0 })
			gate.down.Store(false)
			return fmt.Sprintf("schema registry answering again (%d requests refused meanwhile)", gate.refused.Load())
		},
	})
	t.Log("avro stream through a registry outage:\n  " + report)

	at := s.recs[unknownAt]
	var reason string
	for _, d := range testenv.ReadTopic(t, w.brokers, s.dlq) {
		dl := dlq.Parse(d)
		if dl.OriginalTopic == at.Topic && dl.OriginalPartition != nil && *dl.OriginalPartition == at.Partition && dl.OriginalOffset != nil && *dl.OriginalOffset == at.Offset {
			reason = dl.Reason
		}
	}
	if reason != dlq.ReasonUnsupported {
		t.Errorf("the value naming an unknown schema id (%s): dead-lettered as %q, want unsupported", invariant.Addr(at.Topic, at.Partition, at.Offset), reason)
	}
}
