package inspect

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestFingerprintTableSpills drives a table with a tiny memory limit through several spills
// and checks that every key reads back its newest value, from memory or from disk, and that
// no file of it is left in the directory, open or closed. The spills are written behind the Puts: a Get meets
// keys in the map being written and on disk alike. A limit of 8 writes runs shorter than a
// block; one of 300, runs of several blocks and a part of one.
func TestFingerprintTableSpills(t *testing.T) {
	for _, c := range []struct{ limit, n int }{{8, 1200}, {300, 3000}} {
		t.Run(strconv.Itoa(c.limit), func(t *testing.T) { testFingerprintTableSpills(t, c.limit, uint64(c.n)) })
	}
}

func testFingerprintTableSpills(t *testing.T, limit int, n uint64) {
	ctx := context.Background()
	dir := t.TempDir()
	spill := &spillStore{dir: dir}
	tab := newFingerprintTable("events", limit, spill)
	for k := uint64(1); k <= n; k++ {
		if err := tab.Put(ctx, k*0x9E3779B97F4A7C15, fingerprint{int64(k), 1, 2, 3}); err != nil {
			t.Fatal(err)
		}
	}
	if !tab.Spilled() {
		t.Fatalf("no spill with %d keys and a limit of %d", n, limit)
	}
	if len(tab.mem) > limit || len(tab.frozen) > limit {
		t.Fatalf("memory holds %d entries and %d being spilled, limit %d", len(tab.mem), len(tab.frozen), limit)
	}
	// Update every key: the value read back must be the newest, wherever the old one lives.
	for k := uint64(1); k <= n; k++ {
		key := k * 0x9E3779B97F4A7C15
		v, ok, err := tab.Get(ctx, key)
		if err != nil || !ok || v[0] != int64(k) {
			t.Fatalf("get %d = %v %v %v", k, v, ok, err)
		}
		v[1]++
		if err := tab.Put(ctx, key, v); err != nil {
			t.Fatal(err)
		}
	}
	for k := uint64(1); k <= n; k++ {
		v, ok, err := tab.Get(ctx, k*0x9E3779B97F4A7C15)
		if err != nil || !ok || v != (fingerprint{int64(k), 2, 2, 3}) {
			t.Fatalf("after update, get %d = %v %v %v", k, v, ok, err)
		}
	}
	for k := uint64(1); k <= n; k++ { // absent keys, among the spilled ones and past them
		if _, ok, err := tab.Get(ctx, k*0x9E3779B97F4A7C15+1); ok || err != nil {
			t.Fatalf("absent key %d found: %v %v", k, ok, err)
		}
	}
	if _, ok, err := tab.Get(ctx, 0); ok || err != nil {
		t.Fatalf("absent key 0 found: %v %v", ok, err)
	}
	if err := tab.wait(); err != nil { // the spill still being written
		t.Fatal(err)
	}
	// Past the filters: every run asked for absent keys with a filter that says "maybe" to
	// all of them reads its span and finds none of them.
	for _, r := range tab.runs {
		r.filter = alwaysMaybe()
		for k := uint64(1); k <= n; k++ {
			if _, ok, err := r.get(k*0x9E3779B97F4A7C15+1, &tab.block); ok || err != nil {
				t.Fatalf("run of %d: absent key %d found: %v %v", r.n, k, ok, err)
			}
		}
	}
	// Merged as they accumulate: fewer than runFanIn runs of any level, and a file for each.
	levels := map[int]int{}
	for _, r := range tab.runs {
		if levels[r.level]++; levels[r.level] >= runFanIn {
			t.Fatalf("%d runs of level %d: %v", levels[r.level], r.level, levels)
		}
	}
	if limit == 8 && levels[0]+levels[1] == len(tab.runs) {
		t.Fatalf("no run merged twice with %d spills: %v", 2*int(n)/limit, levels)
	}
	if len(spill.files) != len(tab.runs) {
		t.Fatalf("%d run files open for %d runs", len(spill.files), len(tab.runs))
	}
	// The runs' files are unlinked as soon as they are made: nothing of the lint is left in
	// the directory, even before Close (a SIGKILL leaves nothing behind).
	if names, _ := filepath.Glob(filepath.Join(dir, "*")); runtime.GOOS != "windows" && len(names) != 0 {
		t.Fatalf("spill files named in the directory: %v", names)
	}
	if err := spill.Close(); err != nil {
		t.Fatal(err)
	}
	if names, _ := filepath.Glob(filepath.Join(dir, "*")); len(names) != 0 || len(spill.files) != 0 {
		t.Fatalf("after Close: %v named, %d open", names, len(spill.files))
	}
}

// alwaysMaybe is a filter that says every key may be there.
func alwaysMaybe() *bloom {
	b := newBloom(64)
	b.words[0] = ^uint64(0)
	return b
}

// TestRunOfManySpans reads a run with more entries than its samples cover one span each: a
// lookup narrows the span between two samples by reading single keys first.
func TestRunOfManySpans(t *testing.T) {
	spill := &spillStore{dir: t.TempDir()}
	defer spill.Close()
	if err := spill.open(); err != nil {
		t.Fatal(err)
	}
	const n = 3 * runSamples * runSpan // spans of 192 entries
	entries := make([]entry, n)
	for i := range entries {
		entries[i] = entry{uint64(2*i + 10), fingerprint{int64(i), -1, 0, 7}}
	}
	r, err := spill.write(context.Background(), entries)
	if err != nil {
		t.Fatal(err)
	}
	if r.span <= runSpan || len(r.samples) > runSamples {
		t.Fatalf("span %d, %d samples", r.span, len(r.samples))
	}
	r.filter = alwaysMaybe()
	var buf []byte
	for i := 0; i < n; i += 97 {
		v, ok, err := r.get(uint64(2*i+10), &buf)
		if err != nil || !ok || v != (fingerprint{int64(i), -1, 0, 7}) {
			t.Fatalf("key of entry %d: %v %v %v", i, v, ok, err)
		}
		if _, ok, err := r.get(uint64(2*i+11), &buf); ok || err != nil {
			t.Fatalf("absent key after entry %d: %v %v", i, ok, err)
		}
	}
	for _, k := range []uint64{0, 9, 2*n + 10, ^uint64(0)} {
		if _, ok, err := r.get(k, &buf); ok || err != nil {
			t.Fatalf("absent key %d: %v %v", k, ok, err)
		}
	}
	if v, ok, _ := r.get(2*(n-1)+10, &buf); !ok || v[0] != n-1 {
		t.Fatalf("last key: %v %v", v, ok)
	}
}

// TestMergeKeepsTheNewest merges runs that share keys: each key once, from the newest run
// that holds it, in key order.
func TestMergeKeepsTheNewest(t *testing.T) {
	ctx := context.Background()
	spill := &spillStore{dir: t.TempDir()}
	defer spill.Close()
	if err := spill.open(); err != nil {
		t.Fatal(err)
	}
	var runs []*run
	for age := range 3 { // run age holds the keys that are multiples of age+1, below 300
		var es []entry
		for k := uint64(0); k < 300; k += uint64(age + 1) {
			es = append(es, entry{k, fingerprint{int64(age)}})
		}
		r, err := spill.write(ctx, es)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	m, err := spill.merge(ctx, runs)
	if err != nil {
		t.Fatal(err)
	}
	if m.n != 300 || m.level != 1 {
		t.Fatalf("merged %d entries at level %d", m.n, m.level)
	}
	m.filter = alwaysMaybe()
	var buf []byte
	for k := uint64(0); k < 300; k++ {
		want := int64(0)
		switch {
		case k%3 == 0:
			want = 2
		case k%2 == 0:
			want = 1
		}
		if v, ok, err := m.get(k, &buf); err != nil || !ok || v[0] != want {
			t.Fatalf("key %d: %v %v %v, want age %d", k, v, ok, err, want)
		}
	}
	if _, ok, err := m.get(300, &buf); ok || err != nil {
		t.Fatalf("absent key: %v %v", ok, err)
	}
}

func TestFingerprintTableStaysInMemoryUnderLimit(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	spill := &spillStore{dir: dir}
	defer spill.Close()
	tab := newFingerprintTable("events", 100, spill)
	for k := uint64(0); k < 100; k++ {
		if err := tab.Put(ctx, k, fingerprint{}); err != nil {
			t.Fatal(err)
		}
	}
	if tab.Spilled() {
		t.Fatal("spilled below the limit")
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*")); len(files) != 0 {
		t.Fatalf("files made without a spill: %v", files)
	}
}

func TestBloomHasNoFalseNegatives(t *testing.T) {
	b := newBloom(bloomBits)
	for k := uint64(0); k < 100000; k++ {
		b.add(k * 7919)
	}
	for k := uint64(0); k < 100000; k++ {
		if !b.mayContain(k * 7919) {
			t.Fatalf("added key %d not found", k*7919)
		}
	}
	fp := 0
	for k := uint64(0); k < 100000; k++ {
		if b.mayContain(k*7919 + 1) {
			fp++
		}
	}
	if fp > 1000 {
		t.Errorf("%d false positives in 100000 with 100000 keys in 2^26 bits", fp)
	}
}

// TestSpillOfAnEndedLint: a spill or a merge whose context has ended writes nothing and
// leaves no file behind.
func TestSpillOfAnEndedLint(t *testing.T) {
	spill := &spillStore{dir: t.TempDir()}
	defer spill.Close()
	if err := spill.open(); err != nil {
		t.Fatal(err)
	}
	r, err := spill.write(context.Background(), []entry{{1, fingerprint{}}, {2, fingerprint{}}})
	if err != nil {
		t.Fatal(err)
	}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := spill.write(ended, []entry{{3, fingerprint{}}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("spill of an ended lint: %v", err)
	}
	if _, err := spill.merge(ended, []*run{r}); !errors.Is(err, context.Canceled) {
		t.Fatalf("merge of an ended lint: %v", err)
	}
	if len(spill.files) != 1 {
		t.Fatalf("%d run files open, want the one written", len(spill.files))
	}
}

// TestSpillToAMissingDirectory: the first spill fails with the cause when the directory
// cannot hold files, and makes none.
func TestSpillToAMissingDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing")
	spill := &spillStore{dir: dir}
	err := spill.open()
	if err == nil || !strings.HasPrefix(err.Error(), "create spill store: ") || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("open of a missing directory: %v", err)
	}
	tab := newFingerprintTable("events", 1, spill)
	ctx := context.Background()
	err = tab.Put(ctx, 1, fingerprint{})
	if err == nil {
		err = tab.Put(ctx, 2, fingerprint{})
	}
	if err == nil {
		err = tab.wait()
	}
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("spill into a missing directory: %v", err)
	}
}

// TestUnlinkedFile: the fallback of spillFile (a filesystem without O_TMPFILE, other
// systems) leaves no name in the directory, and the file holds what is written to it.
func TestUnlinkedFile(t *testing.T) {
	dir := t.TempDir()
	f, named, err := unlinkedFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	names, _ := filepath.Glob(filepath.Join(dir, "*"))
	if runtime.GOOS != "windows" && (named || len(names) != 0) {
		t.Fatalf("named %v, names %v", named, names)
	}
	if _, err := f.WriteAt([]byte("run"), 0); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 3)
	if _, err := f.ReadAt(got, 0); err != nil || string(got) != "run" {
		t.Fatalf("read back %q, %v", got, err)
	}
}
