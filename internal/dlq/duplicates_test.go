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
