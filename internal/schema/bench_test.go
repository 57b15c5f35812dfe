package schema

import (
	"context"
	"testing"

	"github.com/fieldwork/fieldwork/internal/sample"
)

// BenchmarkEvent reads the envelope of unframed structured CloudEvents records, as every
// reader does for a JSON topic.
func BenchmarkEvent(b *testing.B) {
	o := sample.DefaultOptions(1)
	o.Poison = 0
	rs, _, err := sample.Generate(o)
	if err != nil {
		b.Fatal(err)
	}
	recs := sample.KgoRecords("bench", rs)
	var d *Decoder
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, _, err := d.Event(ctx, recs[i%len(recs)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
