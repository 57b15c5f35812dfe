package hostile

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/testenv"
)

// createTopics creates one-partition topics whose max.message.bytes holds the large records,
// deleted at cleanup.
func createTopics(t *testing.T, names ...string) {
	t.Helper()
	adm := kadm.NewClient(testenv.Client(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	forever, size := "-1", strconv.Itoa(maxMessageBytes)
	resp, err := adm.CreateTopics(ctx, 1, 1, map[string]*string{"retention.ms": &forever, "max.message.bytes": &size}, names...)
	if err != nil {
		t.Fatalf("create topics %v: %v", names, err)
	}
	for _, r := range resp.Sorted() {
		if r.Err != nil {
			t.Fatalf("create topic %s: %v", r.Topic, r.Err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = adm.DeleteTopics(ctx, names...)
	})
}

// produce writes recs to topic in order, one at a time, so that record i is at offset i.
func produce(t *testing.T, topic string, recs []hostileRecord) {
	t.Helper()
	cl := testenv.Client(t, kgo.ProducerBatchMaxBytes(maxMessageBytes), kgo.MaxBufferedBytes(4*maxMessageBytes))
	for i, h := range recs {
		r := &kgo.Record{Topic: topic, Key: h.key, Value: h.value, Headers: h.header}
		testenv.Produce(t, cl, r)
		if r.Offset != int64(i) {
			t.Fatalf("%s went to offset %d, want %d", h.name, r.Offset, i)
		}
	}
}

// readTopic returns every record of topic's partition 0 from offset from up to its high
// watermark now, read by a plain franz-go consumer (not fieldwork's reader), bounded in time.
func readTopic(t *testing.T, topic string, from int64) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := kadm.NewClient(testenv.Client(t))
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("end offsets of %s: %v", topic, err)
	}
	end, ok := ends.Lookup(topic, 0)
	if !ok || end.Err != nil {
		t.Fatalf("end offset of %s/0: %+v", topic, end)
	}
	if end.Offset <= from {
		return nil
	}
	cl := testenv.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(from)}}))
	var out []*kgo.Record
	for int64(len(out)) < end.Offset-from {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s: %d of %d records within a minute", topic, len(out), end.Offset-from)
		}
		if err := fs.Err(); err != nil {
			t.Fatalf("read %s: %v", topic, err)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

// schema returns a PostgreSQL schema name of the test's own, dropped with everything in it at
// cleanup.
func schema(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "fwhostile_" + hex.EncodeToString(b)
	dsn := testenv.DSN(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Logf("drop schema %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS "`+name+`" CASCADE`); err != nil {
			t.Logf("drop schema %s: %v", name, err)
		}
	})
	return name
}

// markerOffsets returns the source offsets of consumer's markers.
func markerOffsets(t *testing.T, schema, consumer string) map[int64]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, testenv.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT "offset", event_id FROM "`+schema+`".processed_events WHERE consumer = $1`, consumer)
	if err != nil {
		t.Fatalf("markers of %s: %v", consumer, err)
	}
	out := map[int64]string{}
	for rows.Next() {
		var off int64
		var id string
		if err := rows.Scan(&off, &id); err != nil {
			t.Fatal(err)
		}
		out[off] = id
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// sameHeaders reports whether two header lists are equal key for key and byte for byte.
func sameHeaders(a, b []kgo.RecordHeader) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || !bytes.Equal(a[i].Value, b[i].Value) {
			return false
		}
	}
	return true
}

func header(hs []kgo.RecordHeader, key string) (string, bool) {
	for i := len(hs) - 1; i >= 0; i-- {
		if hs[i].Key == key {
			return string(hs[i].Value), true
		}
	}
	return "", false
}
