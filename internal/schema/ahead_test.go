package schema_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/schema"
)

// TestAheadKeepsOrder checks that Ahead gives judge every record in the order given, each
// with what ReadEvent reads of it, across batches and for a last partial batch; that judge's
// error stops the reading (Add returns it, nothing after it is judged); and that Stop alone
// ends the goroutine without judging.
func TestAheadKeepsOrder(t *testing.T) {
	ctx := context.Background()
	var d *schema.Decoder
	records := make([]*kgo.Record, 1000)
	for i := range records {
		v := fmt.Sprintf(`{"event_id":"e%d","aggregate_id":"a","aggregate_version":%d}`, i, i)
		if i%7 == 3 {
			v = "not an event"
		}
		records[i] = &kgo.Record{Offset: int64(i), Value: []byte(v)}
	}
	var got []schema.Read
	a := d.Ahead(ctx, func(r schema.Read) error { got = append(got, r); return nil })
	defer a.Stop()
	for _, rec := range records {
		if err := a.Add(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Finish(); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(records) {
		t.Fatalf("%d records judged, want %d", len(got), len(records))
	}
	for i, r := range got {
		ev, err, _ := d.ReadEvent(ctx, records[i])
		if r.Record != records[i] || r.Event.ID != ev.ID || r.Event.Version != ev.Version || fmt.Sprint(r.Err) != fmt.Sprint(err) {
			t.Fatalf("record %d: %+v, want %+v, %v", i, r, ev, err)
		}
	}

	boom := errors.New("boom")
	judged := 0
	a = d.Ahead(ctx, func(r schema.Read) error {
		judged++
		if r.Record.Offset == 300 {
			return boom
		}
		return nil
	})
	var addErr error
	for _, rec := range records {
		if addErr = a.Add(rec); addErr != nil {
			break
		}
	}
	if err := a.Finish(); !errors.Is(err, boom) || (addErr != nil && !errors.Is(addErr, boom)) {
		t.Errorf("Finish = %v, Add = %v, want boom", err, addErr)
	}
	if judged != 301 {
		t.Errorf("%d records judged, want 301 (up to the failing one)", judged)
	}

	// Add may judge the batches already read (judge runs on this goroutine); Stop judges none.
	stopping := false
	a = d.Ahead(ctx, func(schema.Read) error {
		if stopping {
			t.Error("judged after Stop")
		}
		return nil
	})
	for _, rec := range records[:600] {
		if err := a.Add(rec); err != nil {
			t.Fatal(err)
		}
	}
	stopping = true
	a.Stop()
	a.Stop()
}

// TestAheadRegistryFailure: a registry that fails ends the reading at the framed record: the
// records before it are judged, it and those after are not, and the failure is returned.
func TestAheadRegistryFailure(t *testing.T) {
	_, _, ids := fake(t)
	down := srfake.New()
	url := down.URL()
	down.Close()
	d := decoder(t, schema.Config{URL: url})
	ctx := context.Background()
	judged := 0
	a := d.Ahead(ctx, func(schema.Read) error { judged++; return nil })
	defer a.Stop()
	var err error
	for i := 0; i < 2000 && err == nil; i++ {
		v := []byte(fmt.Sprintf(`{"event_id":"e%d"}`, i))
		if i == 900 {
			v = avroEvent(t, ids)
		}
		err = a.Add(&kgo.Record{Offset: int64(i), Value: v})
	}
	if err == nil {
		err = a.Finish()
	}
	if err == nil || fwerr.KindOf(err) == fwerr.KindOf(nil) {
		t.Fatalf("err = %v, want the registry's failure, kinded", err)
	}
	if judged != 900 {
		t.Errorf("%d records judged, want 900", judged)
	}
}
