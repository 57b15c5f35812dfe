package processed_test

import (
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/processed"
	"github.com/fieldwork/fieldwork/internal/schema"
	"github.com/fieldwork/fieldwork/internal/schema/schematest"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestCheckReadsRegistryFramedEvents: the gap finder reads Avro events framed for a schema
// registry through the real registry, as inspect validate does, and finds the unmarked ones;
// without a registry they are malformed, naming their schema id; with a registry that does
// not answer the check stops (a connection error) rather than call them malformed.
func TestCheckReadsRegistryFramedEvents(t *testing.T) {
	c, st := checkServices(t)
	url, user, pw := testenv.SchemaRegistry(t)
	ids := schematest.Register(t, testenv.RegistryClient(t), testenv.Name(t, "pcsr"))
	vs, _ := schematest.Serde(t, ids.AvroEvent, ids.AvroKey)
	topic := testenv.Topic(t, 1, nil)
	prod := testenv.Client(t, kgo.DefaultProduceTopic(topic))
	var recs []*kgo.Record
	for i := range 4 {
		recs = append(recs, &kgo.Record{Key: []byte("task-1"), Value: vs.MustEncode(schematest.Event{
			EventID: fmt.Sprintf("evt-avro-%d", i), AggregateType: "task", AggregateID: "task-1", AggregateVersion: int64(i + 1), Type: "task.renamed",
			Data: schematest.TaskData{Title: "t"}})})
	}
	testenv.Produce(t, prod, recs...)
	mark(t, st, "billing", dedup.Marker{EventID: "evt-avro-0"}, dedup.Marker{EventID: "evt-avro-2"})
	check := func(dec *schema.Decoder) (*processed.CheckReport, error) {
		return processed.Check(ctx(t), c, st, processed.CheckOptions{Topic: topic, Consumer: "billing", MaxMissing: 10, Schemas: dec})
	}

	dec, err := schema.New(schema.Config{URL: url, Username: user, Password: pw})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := check(dec)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records != 4 || rep.Events != 4 || rep.Malformed != 0 || rep.WithMarker != 2 || rep.Missing != 2 {
		t.Fatalf("with the registry: records %d events %d malformed %d with marker %d missing %d, want 4 4 0 2 2",
			rep.Records, rep.Events, rep.Malformed, rep.WithMarker, rep.Missing)
	}
	if got := fmt.Sprint(rep.MissingRecords[0].EventID, " ", rep.MissingRecords[1].EventID); got != "evt-avro-1 evt-avro-3" {
		t.Fatalf("missing %s, want evt-avro-1 evt-avro-3", got)
	}

	// No registry: the framing is detected, each record is malformed and says which schema.
	rep, err = check(nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Events != 0 || rep.Malformed != 4 || len(rep.MalformedExamples) != 4 {
		t.Fatalf("without a registry: events %d malformed %d", rep.Events, rep.Malformed)
	}
	if m := rep.MalformedExamples[0]; m.Format != "confluent" || m.Field != "value" ||
		!strings.Contains(m.Message, fmt.Sprintf("%s/0/0: ", topic)) || !strings.Contains(m.Message, "--schema-registry") {
		t.Fatalf("without a registry: %+v", m)
	}

	// A registry that does not answer: the records are unread, not malformed.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	down, err := schema.New(schema.Config{URL: "http://" + addr, Username: user, Password: pw})
	if err != nil {
		t.Fatal(err)
	}
	if rep, err = check(down); err == nil || fwerr.KindOf(err) != fwerr.KindConnect || !strings.Contains(err.Error(), addr) {
		t.Fatalf("registry down: %+v, %v; want a connection error naming %s", rep, err, addr)
	}
}
