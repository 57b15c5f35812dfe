package testenv_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestPrivateKafka: a private broker takes extra server properties, and keeps its records
// across Stop and Start, and across Kill and Start.
func TestPrivateKafka(t *testing.T) {
	k := testenv.StartPrivateKafka(t, map[string]string{"message.max.bytes": "2097152"})
	cl := k.Client(t, kgo.DefaultProduceTopic("t"))
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	rcs, err := adm.DescribeBrokerConfigs(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	rc, _ := rcs.On("1", nil)
	for _, c := range rc.Configs {
		if c.Key == "message.max.bytes" && c.MaybeValue() != "2097152" {
			t.Errorf("message.max.bytes = %s, want the 2097152 asked for", c.MaybeValue())
		}
	}
	produce := func() {
		t.Helper()
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	produce()
	k.Stop()
	k.Start()
	produce()
	k.Kill()
	k.Start()
	produce()
	ends, err := adm.ListEndOffsets(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("t", 0); o.Offset != 3 {
		t.Errorf("end offset %d after a stop and a kill, want 3", o.Offset)
	}
}
