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

// Folder folds the share-group dead letters of one record into the first one kept: the one
// rule of which dead letters are duplicates, used by a listing (collapser, one DLQ partition
// at a time), the console (every dead letter it holds) and a follow (Follow).
type Folder struct {
	first map[kafka.RecordAddress]*Entry
}

// NewFolder is an empty Folder.
func NewFolder() *Folder { return &Folder{first: map[kafka.RecordAddress]*Entry{}} }

// Of is the entry kept for d's record when d is a share group's dead letter of a record that
// already has one, and is not that dead letter itself; nil otherwise.
func (f *Folder) Of(d *DeadLetter) *Entry {
	a, ok := originalAddress(d)
	if !ok {
		return nil
	}
	e := f.first[a]
	if e == nil || e.Address() == d.Address() {
		return nil
	}
	return e
}

// Keep keeps e (by its pointer: its Duplicates grow as Fold finds more) as the first dead
// letter of its record, when it is a share group's dead letter that names one.
func (f *Folder) Keep(e *Entry) {
	if a, ok := originalAddress(&e.DeadLetter); ok {
		if _, held := f.first[a]; !held {
			f.first[a] = e
		}
	}
}

// Remember keeps d as the first dead letter of its record, as Keep does, but only its
// address and its original's (what Of needs): for a follow, which remembers every record it
// has shown without holding the records.
func (f *Folder) Remember(d *DeadLetter) {
	f.Keep(&Entry{DeadLetter: DeadLetter{Topic: d.Topic, Partition: d.Partition, Offset: d.Offset, Convention: d.Convention,
		OriginalTopic: d.OriginalTopic, OriginalPartition: d.OriginalPartition, OriginalOffset: d.OriginalOffset}})
}

// Fold folds e into the first dead letter of its record, when one is kept: e's address is
// appended to that one's Duplicates and it is returned. Otherwise e is kept (Keep) and nil
// is returned.
func (f *Folder) Fold(e *Entry) *Entry {
	if first := f.Of(&e.DeadLetter); first != nil {
		first.Duplicates = append(first.Duplicates, e.Address())
		return first
	}
	f.Keep(e)
	return nil
}

// Reset forgets every dead letter kept.
func (f *Folder) Reset() { clear(f.first) }

// collapser holds the share-group dead letters of the DLQ partition being listed, one entry
// a record, and hands them on when the partition is read.
type collapser struct {
	emit  func(Entry) error
	topic string
	part  int32
	held  []*Entry
	fold  *Folder
}

func newCollapser(emit func(Entry) error) *collapser {
	return &collapser{emit: emit, fold: NewFolder()}
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
	first := c.fold.Of(d)
	if first == nil {
		return false, nil
	}
	first.Duplicates = append(first.Duplicates, d.Address())
	return true, nil
}

// add holds e when it is a share group's dead letter of a record, else hands it on.
func (c *collapser) add(e Entry) error {
	if _, ok := originalAddress(&e.DeadLetter); !ok {
		return c.emit(e)
	}
	held := new(Entry) // not &e: e would then be on the heap for every entry, held or not
	*held = e
	c.fold.Keep(held)
	c.held = append(c.held, held)
	return nil
}

// flush hands the held entries on, in the order they were read.
func (c *collapser) flush() error {
	held := c.held
	c.held = nil
	c.fold.Reset()
	for _, e := range held {
		if err := c.emit(*e); err != nil {
			return err
		}
	}
	return nil
}
