package replay

import (
	"testing"
)

// TestJournaledPartitioners: the partitioners a run's attempts chose are journaled with its
// selection and read back; a resume's plan takes them (seed) as its own, whatever the targets
// say now, without asking the cluster, and says an earlier attempt chose them. A choice seeded
// again (a resume of a resume) keeps what it said.
func TestJournaledPartitioners(t *testing.T) {
	s := Spec{From: "tasks.dlq"}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	keyed := int64(12)
	chosen := []PartitionerChoice{
		{Topic: "tasks", Partitioner: "fnv1a", By: ByInferred, KeyedRecords: &keyed, Agree: &keyed, Matching: []string{"fnv1a"}, Why: "12 of 12 keyed records of tasks agree"},
		{Topic: "audit", Partitioner: "murmur2", By: ByDefault, Matching: []string{}, Why: "audit has one partition: every partitioner agrees there"},
	}
	_, _, back, err := unmarshalSpec(marshalRun(&s, executionOf(ExecOptions{}), chosen))
	if err != nil || len(back) != 2 || back[0].String() != chosen[0].String() || back[1].String() != chosen[1].String() ||
		back[0].KeyedRecords == nil || *back[0].KeyedRecords != 12 {
		t.Fatalf("read back: %+v %v", back, err)
	}
	if JournaledPartitioners(marshalRun(&s, executionOf(ExecOptions{}), chosen))[0].Partitioner != "fnv1a" {
		t.Fatal("JournaledPartitioners does not read the journaled choice")
	}

	var p Plan
	p.partitioners.seed(back)
	// A nil cluster: a choice that is not the seeded one would have to sample it.
	got, err := p.partitioners.choose(t.Context(), nil, "tasks", "")
	if want := "fnv1a (run: inferred by an earlier attempt: 12 of 12 keyed records of tasks agree)"; err != nil || got.By != ByRun || got.String() != want {
		t.Fatalf("seeded choice %+v %v: want %q", got, err, want)
	}
	if p.partitioners.made.Load() != 2 || len(p.partitioners.choices()) != 2 {
		t.Fatalf("%d choices made, %d kept: want 2", p.partitioners.made.Load(), len(p.partitioners.choices()))
	}
	// --partitioner still wins over a journaled choice.
	if got, _ := p.partitioners.choose(t.Context(), nil, "tasks", "crc32"); got.Partitioner != "crc32" || got.By != ByFlag {
		t.Fatalf("--partitioner crc32 against a journaled fnv1a: %+v", got)
	}

	var again Plan
	again.partitioners.seed(p.partitioners.choices())
	if ch := again.partitioners.choices(); len(ch) != 2 || ch[0].String() != p.partitioners.choices()[0].String() {
		t.Fatalf("seeded twice: %+v", ch)
	}
}
