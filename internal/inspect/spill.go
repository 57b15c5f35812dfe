package inspect

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"sync"
)

// entry is a key and its fingerprint as a run holds them: entrySize bytes on disk, the key
// then the fingerprint's four fields, little-endian.
type entry struct {
	k uint64
	v fingerprint
}

const entrySize = 8 + 4*8

// Run sizes and lookups.
const (
	// runFanIn runs of one level are merged into one run of the next: every entry is
	// rewritten once a level, and a table holds at most runFanIn-1 runs a level.
	runFanIn = 8
	// runSamples bounds the keys a run keeps in memory to find where a key would be: one every
	// runSpan entries or more, so that a run of any size costs at most 16 KiB of them.
	runSamples = 2048
	// runSpan is the fewest entries between two samples: the span a lookup reads at once
	// (2,560 bytes) when the run is small enough.
	runSpan = 64
	// runFilterMax caps a run's own filter (1 MiB): past 2²³ keys its "maybe" grows less
	// useful, and the table's filter and the samples still bound what is read.
	runFilterMax = 1 << 23
)

// run is one sorted file of entries: n of them, one key of every span entries kept (samples),
// a filter over its keys, and its level (0 for a spill, one more than its inputs' for a
// merge).
type run struct {
	f       *os.File
	n       int
	span    int
	samples []uint64
	filter  *bloom
	level   int
}

// runFilterBits sizes a run's filter at 16 bits or more a key (a power of two), at most
// runFilterMax: with 3 probes it answers "maybe" for about half a percent of the keys not in
// the run below the cap.
func runFilterBits(n int) uint32 {
	bits := uint32(1 << 10)
	for int(bits) < 16*n && bits < runFilterMax {
		bits <<= 1
	}
	return bits
}

// runWriter writes a run's entries in key order, sampling and filtering them as they go.
type runWriter struct {
	r   *run
	w   *bufio.Writer
	buf [entrySize]byte
}

// newRunWriter starts a run of at most n entries in a new file of dir.
func (d *spillStore) newRunWriter(n, level int) (*runWriter, error) {
	f, err := d.create()
	if err != nil {
		return nil, err
	}
	span := max(runSpan, (n+runSamples-1)/runSamples)
	r := &run{f: f, span: span, filter: newBloom(runFilterBits(n)), level: level}
	return &runWriter{r: r, w: bufio.NewWriterSize(f, 1<<16)}, nil
}

func (w *runWriter) add(e entry) error {
	if w.r.n%w.r.span == 0 {
		w.r.samples = append(w.r.samples, e.k)
	}
	w.r.n++
	w.r.filter.add(e.k)
	binary.LittleEndian.PutUint64(w.buf[:], e.k)
	for i, f := range e.v {
		binary.LittleEndian.PutUint64(w.buf[8+8*i:], uint64(f))
	}
	_, err := w.w.Write(w.buf[:])
	return err
}

// get reads k's fingerprint from the run when its filter says k may be there: the span of
// entries between the two samples around k, read at once when it is runSpan entries or
// fewer, or first narrowed by reading single keys. buf is reused between reads.
func (r *run) get(k uint64, buf *[]byte) (fingerprint, bool, error) {
	if !r.filter.mayContain(k) {
		return fingerprint{}, false, nil
	}
	s := sort.Search(len(r.samples), func(i int) bool { return r.samples[i] > k }) - 1
	if s < 0 {
		return fingerprint{}, false, nil
	}
	lo, hi := s*r.span, min((s+1)*r.span, r.n)
	var key [8]byte
	for hi-lo > runSpan { // the first entry of [lo, hi) is at most k
		mid := lo + (hi-lo)/2
		if _, err := r.f.ReadAt(key[:], int64(mid)*entrySize); err != nil {
			return fingerprint{}, false, err
		}
		if binary.LittleEndian.Uint64(key[:]) <= k {
			lo = mid
		} else {
			hi = mid
		}
	}
	*buf = slices.Grow((*buf)[:0], (hi-lo)*entrySize)[:(hi-lo)*entrySize]
	if _, err := r.f.ReadAt(*buf, int64(lo)*entrySize); err != nil {
		return fingerprint{}, false, err
	}
	blk := *buf
	i := sort.Search(hi-lo, func(i int) bool { return binary.LittleEndian.Uint64(blk[i*entrySize:]) >= k })
	if i == hi-lo || binary.LittleEndian.Uint64(blk[i*entrySize:]) != k {
		return fingerprint{}, false, nil
	}
	return decodeFingerprint(blk[i*entrySize+8:]), true, nil
}

func decodeFingerprint(b []byte) fingerprint {
	var v fingerprint
	for j := range v {
		v[j] = int64(binary.LittleEndian.Uint64(b[8*j:]))
	}
	return v
}

// spillStore is where the fingerprint tables' runs are written: temporary files of dir with no
// name (spillFile), so that their bytes live only while the lint holds them open and the
// system frees them when the lint ends however it ends (a SIGKILL too). Where a file open
// cannot be unlinked (Windows), its name is kept and it is removed by drop or Close.
// Nothing is synced: the files die with the lint.
type spillStore struct {
	dir   string // where the files are made (os.TempDir() when empty)
	mu    sync.Mutex
	files map[*os.File]bool // the runs' files open: true when still named
}

// open checks, at the first spill, that the files can be made in dir: a missing or
// unwritable directory fails the lint there, with its cause.
func (d *spillStore) open() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.files != nil {
		return nil
	}
	f, err := d.createLocked()
	if err != nil {
		return err
	}
	d.closeLocked(f)
	return nil
}

// create makes the next run's file.
func (d *spillStore) create() (*os.File, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.createLocked()
}

func (d *spillStore) createLocked() (*os.File, error) {
	f, named, err := spillFile(d.dir)
	if err != nil {
		return nil, fmt.Errorf("create spill store: %w", err)
	}
	if d.files == nil {
		d.files = map[*os.File]bool{}
	}
	d.files[f] = named
	return f, nil
}

// unlinkedFile makes a temporary file of dir and unlinks it at once: its bytes live while it
// is open. Where an open file cannot be unlinked (Windows) it keeps its name: named.
func unlinkedFile(dir string) (f *os.File, named bool, err error) {
	f, err = os.CreateTemp(dir, "fieldwork-validate-*.run")
	if err != nil {
		return nil, false, err
	}
	return f, os.Remove(f.Name()) != nil, nil
}

// closeLocked closes f and removes it if it is still named.
func (d *spillStore) closeLocked(f *os.File) {
	named := d.files[f]
	delete(d.files, f)
	_ = f.Close()
	if named {
		_ = os.Remove(f.Name())
	}
}

// write writes entries, sorted by key with no key twice, as a run of level 0.
func (d *spillStore) write(ctx context.Context, entries []entry) (*run, error) {
	w, err := d.newRunWriter(len(entries), 0)
	if err != nil {
		return nil, err
	}
	i := 0
	return d.fill(ctx, w, func() (entry, bool, error) {
		if i == len(entries) {
			return entry{}, false, nil
		}
		i++
		return entries[i-1], true, nil
	})
}

// fill writes the entries next gives, in key order, until it says there are no more, and
// returns the run; on error, or when ctx ends, the run's file is removed.
func (d *spillStore) fill(ctx context.Context, w *runWriter, next func() (entry, bool, error)) (*run, error) {
	for i := 0; ; i++ {
		if i%4096 == 0 && ctx.Err() != nil {
			return nil, d.drop(w.r, ctx.Err())
		}
		e, ok, err := next()
		if err != nil {
			return nil, d.drop(w.r, err)
		}
		if !ok {
			break
		}
		if err := w.add(e); err != nil {
			return nil, d.drop(w.r, err)
		}
	}
	if err := w.w.Flush(); err != nil {
		return nil, d.drop(w.r, err)
	}
	return w.r, nil
}

// compact merges the newest runs into one while the last runFanIn of them are of one level,
// and returns the runs left, oldest first. Runs merged away are closed and removed.
func (d *spillStore) compact(ctx context.Context, runs []*run) ([]*run, error) {
	for len(runs) >= runFanIn {
		last := runs[len(runs)-runFanIn:]
		if slices.ContainsFunc(last, func(r *run) bool { return r.level != last[0].level }) {
			break
		}
		merged, err := d.merge(ctx, last)
		if err != nil {
			return runs, err
		}
		for _, r := range last {
			_ = d.drop(r, nil)
		}
		runs = append(runs[:len(runs)-runFanIn], merged)
	}
	return runs, nil
}

// merge writes runs (oldest first) as one run of the next level: their entries in key order,
// a key held by more than one only from the newest. There are at most runFanIn cursors, so
// the smallest key is found by looking at each.
func (d *spillStore) merge(ctx context.Context, runs []*run) (*run, error) {
	n := 0
	cs := make([]*cursor, 0, len(runs)) // oldest first, those not at their end
	for _, r := range runs {
		n += r.n
		c := &cursor{r: bufio.NewReaderSize(io.NewSectionReader(r.f, 0, int64(r.n)*entrySize), 1<<16)}
		ok, err := c.next()
		if err != nil {
			return nil, err
		}
		if ok {
			cs = append(cs, c)
		}
	}
	w, err := d.newRunWriter(n, runs[0].level+1)
	if err != nil {
		return nil, err
	}
	return d.fill(ctx, w, func() (entry, bool, error) {
		if len(cs) == 0 {
			return entry{}, false, nil
		}
		top := cs[0].e
		for _, c := range cs[1:] {
			if c.e.k <= top.k { // a newer run's entry wins a tie
				top = c.e
			}
		}
		kept := cs[:0]
		for _, c := range cs {
			if c.e.k == top.k {
				ok, err := c.next()
				if err != nil {
					return entry{}, false, err
				}
				if !ok {
					continue
				}
			}
			kept = append(kept, c)
		}
		cs = kept
		return top, true, nil
	})
}

// drop closes a run's file (removing it if it is still named) and returns err.
func (d *spillStore) drop(r *run, err error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closeLocked(r.f)
	return err
}

// Close closes every run's file (removing those still named). The tables' runs must be
// written (fingerprintTable.wait) first.
func (d *spillStore) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for f := range d.files {
		d.closeLocked(f)
	}
	return nil
}

// cursor is a merge's place in one run.
type cursor struct {
	r   *bufio.Reader
	e   entry
	buf [entrySize]byte
}

// next reads the cursor's next entry; false at the run's end.
func (c *cursor) next() (bool, error) {
	if _, err := io.ReadFull(c.r, c.buf[:]); err != nil {
		if err == io.EOF {
			return false, nil
		}
		return false, err
	}
	c.e = entry{k: binary.LittleEndian.Uint64(c.buf[:]), v: decodeFingerprint(c.buf[8:])}
	return true, nil
}
