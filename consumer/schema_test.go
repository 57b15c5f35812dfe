package consumer_test

import (
	"context"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/fieldwork/fieldwork/internal/consume/handlers"
	"github.com/fieldwork/fieldwork/internal/dlq"
	"github.com/fieldwork/fieldwork/internal/sample"
	"github.com/fieldwork/fieldwork/internal/schema"
	"github.com/fieldwork/fieldwork/internal/schema/schematest"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestRegistryFramedValues: values in the Confluent wire format (JSON Schema, through the
// real registry) are consumed like JSON ones; one naming a schema id the registry does not
// know is dead-lettered as unsupported, its bytes kept. Without a registry every framed value
// is dead-lettered as unsupported too (its error says to pass --schema-registry), bytes kept:
// the partition never stalls, and nothing is marked.
func TestRegistryFramedValues(t *testing.T) {
	t.Parallel()
	url, user, pw := testenv.SchemaRegistry(t)
	ss, err := testenv.RegistryClient(t).CreateSchema(context.Background(), testenv.Name(t, "consume")+"-value",
		sr.Schema{Schema: schematest.JSONSchema, Type: sr.TypeJSON})
	if err != nil {
		t.Fatal(err)
	}
	frame := func(id int, b []byte) []byte {
		out, _ := new(sr.ConfluentHeader).AppendEncode(nil, id, nil)
		return append(out, b...)
	}
	st, schemaName := pgStore(t)
	topic, dlqTopic := topics(t, 1)
	krecs := []*kgo.Record{
		{Topic: topic, Key: []byte("task-0001"), Value: frame(ss.ID, ceValue(t, "sr-1", sample.TypeCreated, "task-0001", 1))},
		{Topic: topic, Key: []byte("task-0001"), Value: frame(987654319, ceValue(t, "sr-2", sample.TypeCreated, "task-0001", 2))},
		{Topic: topic, Key: []byte("task-0001"), Value: frame(ss.ID, ceValue(t, "sr-1", sample.TypeCreated, "task-0001", 1))}, // a duplicate
		{Topic: topic, Key: []byte("task-0001"), Value: frame(ss.ID, ceValue(t, "sr-3", sample.TypeCreated, "task-0001", 3))},
	}
	testenv.Produce(t, producer(t), krecs...)

	none := engineOpts(t, st, handler(t, st, schemaName, handlers.NameProjection, "sr-none", handlers.Config{}), topic, testenv.Name(t, "sr-none"))
	none.DLQTopic = dlqTopic + "-none"
	testenv.CreateTopic(t, none.DLQTopic, 1, nil)
	if s := run(t, none); s.Processed != 0 || s.DeadLettered != int64(len(krecs)) {
		t.Fatalf("no registry: stats %+v; want every framed value dead-lettered, none processed", s)
	}
	for i, dl := range testenv.ReadTopic(t, testenv.Brokers(t), none.DLQTopic) {
		d := dlq.Parse(dl)
		if d.Reason != dlq.ReasonUnsupported || !strings.Contains(d.ErrorMessage, "--schema-registry") || string(d.Value) != string(krecs[i].Value) {
			t.Errorf("no registry: dead letter %d: reason %q, error %q, value kept %v", i, d.Reason, d.ErrorMessage, string(d.Value) == string(krecs[i].Value))
		}
	}

	dec, err := schema.New(schema.Config{URL: url, Username: user, Password: pw})
	if err != nil {
		t.Fatal(err)
	}
	o := engineOpts(t, st, handler(t, st, schemaName, handlers.NameProjection, "sr", handlers.Config{}), topic, testenv.Name(t, "sr"))
	o.Schemas = dec
	stats := run(t, o)
	if stats.Processed != 2 || stats.Duplicates != 1 || stats.DeadLettered != 1 {
		t.Fatalf("stats %+v; want 2 processed, 1 duplicate, 1 dead-lettered", stats)
	}
	dls := testenv.ReadTopic(t, testenv.Brokers(t), dlqTopic)
	if len(dls) != 1 {
		t.Fatalf("%d dead letters", len(dls))
	}
	d := dlq.Parse(dls[0])
	if d.ExpectedSchema != "id 987654319" || d.ErrorClass != "schema_unknown_schema" {
		t.Errorf("dead letter: expected schema %q, error class %q; want id 987654319, schema_unknown_schema", d.ExpectedSchema, d.ErrorClass)
	}
	if d.Reason != dlq.ReasonUnsupported || string(d.Value) != string(krecs[1].Value) {
		t.Fatalf("dead letter: reason %q, error %q, value kept %v", d.Reason, d.ErrorMessage, string(d.Value) == string(krecs[1].Value))
	}
}
