package envelope

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/sample"
)

// benchRecords are the sample stream's records that decode: structured CloudEvents JSON values
// of about 300 bytes with a content-type header, as a consumer reads them.
func benchRecords(b *testing.B) []*kgo.Record {
	o := sample.DefaultOptions(1)
	o.Poison = 0
	rs, _, err := sample.Generate(o)
	if err != nil {
		b.Fatal(err)
	}
	return sample.KgoRecords("bench", rs)
}

func BenchmarkDecodeRecord(b *testing.B) {
	recs := benchRecords(b)
	size := 0
	for _, r := range recs {
		size += len(r.Value)
	}
	for _, c := range []struct {
		name   string
		decode func(*kgo.Record) (Event, error)
	}{{"owned", DecodeRecord}, {"view", DecodeRecordView}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(size / len(recs)))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := c.decode(recs[i%len(recs)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
