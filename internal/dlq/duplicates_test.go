package dlq

import (
	"fmt"
	"testing"

	"github.com/fieldwork/fieldwork/internal/kafka"
)

// TestCollapser: a share group's dead letters of one record, in one DLQ partition, are one
// entry with the others' addresses; other conventions and other partitions are not folded,
// and the order is kept.
func TestCollapser(t *testing.T) {
	share := func(part int32, off, origOff int64) DeadLetter {
		p := int32(0)
		return DeadLetter{Topic: "dlq.g", Partition: part, Offset: off, Convention: ConventionShareGroup,
			OriginalTopic: "orders", OriginalPartition: &p, OriginalOffset: &origOff}
	}
	fw := share(0, 9, 5)
	fw.Convention = ConventionFieldwork
	in := []DeadLetter{share(0, 0, 5), share(0, 1, 6), share(0, 2, 5), fw, share(0, 3, 5), share(1, 0, 5)}
	var got []string
	c := newCollapser(func(e Entry) error {
		got = append(got, fmt.Sprintf("%s %v", e.Address(), e.Duplicates))
		return nil
	})
	for _, d := range in {
		dup, err := c.duplicate(&d)
		if err != nil {
			t.Fatal(err)
		}
		if !dup {
			if err := c.add(Entry{DeadLetter: d}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := c.flush(); err != nil {
		t.Fatal(err)
	}
	a := func(p int32, o int64) kafka.RecordAddress {
		return kafka.RecordAddress{Topic: "dlq.g", Partition: p, Offset: o}
	}
	want := []string{
		fmt.Sprintf("%s %v", a(0, 9), []kafka.RecordAddress(nil)), // not a share group's: handed on at once
		fmt.Sprintf("%s %v", a(0, 0), []kafka.RecordAddress{a(0, 2), a(0, 3)}),
		fmt.Sprintf("%s %v", a(0, 1), []kafka.RecordAddress(nil)),
		fmt.Sprintf("%s %v", a(1, 0), []kafka.RecordAddress(nil)),
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
}

// TestFolder: across partitions and reads, a share group's later dead letters of one record
// fold into the first kept; the first itself, other records and other conventions do not.
func TestFolder(t *testing.T) {
	share := func(part int32, off, origOff int64) *Entry {
		p := int32(0)
		return &Entry{DeadLetter: DeadLetter{Topic: "dlq.g", Partition: part, Offset: off, Convention: ConventionShareGroup,
			OriginalTopic: "orders", OriginalPartition: &p, OriginalOffset: &origOff}}
	}
	f := NewFolder()
	first := share(0, 0, 5)
	if f.Fold(first) != nil || f.Fold(share(0, 1, 6)) != nil {
		t.Fatal("a first dead letter was folded")
	}
	if f.Of(&first.DeadLetter) != nil {
		t.Fatal("the first dead letter is a duplicate of itself")
	}
	fw := share(0, 9, 5)
	fw.Convention = ConventionFieldwork
	if f.Fold(fw) != nil {
		t.Fatal("another convention's dead letter was folded")
	}
	if got := f.Fold(share(1, 4, 5)); got != first {
		t.Fatalf("a second dead letter of orders/0/5 folded into %v, want %s", got, first.Address())
	}
	if got := fmt.Sprint(first.Duplicates); got != "[dlq.g/1/4]" {
		t.Fatalf("duplicates %s", got)
	}
	f.Reset()
	if f.Fold(share(1, 5, 5)) != nil {
		t.Fatal("a reset folder folded")
	}
}
