package inspect

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/envelope"
	"github.com/fieldwork/fieldwork/internal/schema"
)

// TestFindingsKeepCopies: the lint reads each event's text as a view of its record's value
// (schema.Read), and a finding kept as an example holds a copy of its own, whatever becomes
// of the values once the lint is done with them.
func TestFindingsKeepCopies(t *testing.T) {
	v := newValidator(ValidateOptions{TempDir: t.TempDir()})
	defer v.close()
	var values [][]byte
	for i := range 3 { // no aggregate version: a missing_version finding each
		value := []byte(fmt.Sprintf(`{"specversion":"1.0","id":"e%d","type":"t","source":"s","aggregateid":"a%d"}`, i, i))
		rec := &kgo.Record{Topic: "tasks", Offset: int64(i), Value: value}
		ev, err := envelope.DecodeRecordView(rec)
		if err != nil {
			t.Fatal(err)
		}
		if err := v.record(context.Background(), schema.Read{Record: rec, Event: ev}); err != nil {
			t.Fatal(err)
		}
		values = append(values, value)
	}
	for _, value := range values {
		for k := range value {
			value[k] = 'X'
		}
	}
	var got int
	for _, f := range v.rep.Findings {
		if f.Kind != KindMissingVersion {
			continue
		}
		if f.EventID != fmt.Sprintf("e%d", f.Offset) || f.AggregateID != fmt.Sprintf("a%d", f.Offset) {
			t.Errorf("finding = %+v", f)
		}
		got++
	}
	if got != 3 {
		t.Errorf("%d missing_version findings, want 3: %+v", got, v.rep.Findings)
	}
}
