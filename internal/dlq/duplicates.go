package dlq

import "github.com/fieldwork/fieldwork/internal/kafka"

// A share group's broker can write several dead letters of one record: rejected again after
// its share-partition state was reset, or by two groups that name one DLQ topic. They are
// listed once, the first with the others' addresses (Entry.Duplicates). The broker writes a
// record's dead letters to the DLQ partition its original partition maps to (original
// partition modulo the DLQ's partition count), so they are all in one DLQ partition: a
// listing holds that partition's share-group dead letters until the partition is read, then
// hands them on in order. Other conventions are handed on as they are read: their dead letters
// of one record are distinct failures (a replayed copy that failed again names the copy).

// collapser holds the share-group dead letters of the DLQ partition being listed, one entry
// a record, and hands them on when the partition is read.
type collapser struct {
	emit  func(Entry) error
	topic string
	part  int32
	held  []Entry
	index map[kafka.RecordAddress]int
}

func newCollapser(emit func(Entry) error) *collapser {
	return &collapser{emit: emit, index: map[kafka.RecordAddress]int{}}
}

// originalAddress is where d's original record was, for a share group's dead letter that
// names it whole.
func originalAddress(d *DeadLetter) (kafka.RecordAddress, bool) {
	if d.Convention != ConventionShareGroup || d.OriginalTopic == "" || d.OriginalPartition == nil || d.OriginalOffset == nil {
		return kafka.RecordAddress{}, false
	}
	return kafka.RecordAddress{Topic: d.OriginalTopic, Partition: *d.OriginalPartition, Offset: *d.OriginalOffset}, true
}

// duplicate reports whether d is another dead letter of a record held: it is then counted on
// the held entry, and is no row of its own. A dead letter of another DLQ partition hands the
// held ones on first.
func (c *collapser) duplicate(d *DeadLetter) (bool, error) {
	if d.Topic != c.topic || d.Partition != c.part {
		if err := c.flush(); err != nil {
			return false, err
		}
		c.topic, c.part = d.Topic, d.Partition
	}
	a, ok := originalAddress(d)
	if !ok {
		return false, nil
	}
	i, ok := c.index[a]
	if !ok {
		return false, nil
	}
	c.held[i].Duplicates = append(c.held[i].Duplicates, d.Address())
	return true, nil
}

// add holds e when it is a share group's dead letter of a record, else hands it on.
func (c *collapser) add(e Entry) error {
	a, ok := originalAddress(&e.DeadLetter)
	if !ok {
		return c.emit(e)
	}
	c.index[a] = len(c.held)
	c.held = append(c.held, e)
	return nil
}

// flush hands the held entries on, in the order they were read.
func (c *collapser) flush() error {
	held := c.held
	c.held = nil
	clear(c.index)
	for _, e := range held {
		if err := c.emit(e); err != nil {
			return err
		}
	}
	return nil
}
