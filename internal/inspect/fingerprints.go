package inspect

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	_ "modernc.org/sqlite" // pure-Go SQLite driver for the spill store
)

// DefaultMemoryEntries is how many fingerprints each of Validate's two tables (event ids,
// aggregates) keeps in memory before spilling to disk: about 50 bytes each in a Go map, so
// roughly 6 MiB per table. At 524,288 a run over a million records took 2.8 times the peak
// memory of one over 100,000 (66 → 181 MiB); at 131,072, 1.7 times (72 → 123 MiB), for a
// fifth more CPU time spent spilling (internal/dlq/bench).
const DefaultMemoryEntries = 1 << 17

// fingerprint is the fixed-size value kept per key; its fields' meaning belongs to the table.
type fingerprint [4]int64

// hash64 is FNV-1a over the parts, each followed by a NUL so that ("ab","c") and ("a","bc")
// differ. 64 bits: the chance of any collision among n keys is about n²/2⁶⁵ (one in 37 for a
// billion distinct ids, one in 3.7 million for ten million).
func hash64(parts ...[]byte) uint64 {
	h := newFNV()
	for _, p := range parts {
		h = h.add(p)
	}
	return uint64(h)
}

// fnv64 is FNV-1a as hash/fnv computes it, without its allocation and interface calls:
// Validate hashes every record's id, aggregate and payload.
type fnv64 uint64

func newFNV() fnv64 { return 14695981039346656037 }

// add hashes p and the NUL that ends it (hash64).
func add[T string | []byte](h fnv64, p T) fnv64 {
	for i := 0; i < len(p); i++ {
		h ^= fnv64(p[i])
		h *= 1099511628211
	}
	return h * 1099511628211 // ^= 0, the NUL
}

func (h fnv64) add(p []byte) fnv64 { return add(h, p) }

func (h fnv64) addString(s string) fnv64 { return add(h, s) }

// fingerprintTable maps 64-bit keys to fingerprints with bounded memory. It keeps at most
// limit entries in a Go map. When a Put would take the map past limit, the map is frozen and a
// new one started, and every entry of the frozen map is written to a table of a temporary
// SQLite database in one transaction (replacing older rows of the same keys) on a goroutine of
// its own, while the caller goes on; the next spill first waits for that one. Get looks in the
// map, then in the frozen map being written, then — when a fixed-size Bloom filter over the
// keys spilled says the key may be there — in SQLite, once the write in progress is done. An
// entry in the map is always newer than its row on disk, because Get of a spilled key is
// followed by a Put of its new value into the map, and the next spill replaces the row.
type fingerprintTable struct {
	name   string
	limit  int
	mem    map[uint64]fingerprint
	spill  *spillDB
	filter *bloom
	get    *sql.Stmt
	// frozen is the map being written (nil when none); its write's end comes on writing.
	frozen  map[uint64]fingerprint
	writing chan error
}

func newFingerprintTable(name string, limit int, spill *spillDB) *fingerprintTable {
	return &fingerprintTable{name: name, limit: max(limit, 1), mem: make(map[uint64]fingerprint), spill: spill}
}

func (t *fingerprintTable) Get(ctx context.Context, k uint64) (fingerprint, bool, error) {
	if v, ok := t.mem[k]; ok {
		return v, true, nil
	}
	if v, ok := t.frozen[k]; ok {
		return v, true, nil
	}
	if t.filter == nil || !t.filter.mayContain(k) {
		return fingerprint{}, false, nil
	}
	if err := t.wait(); err != nil {
		return fingerprint{}, false, err
	}
	var v fingerprint
	err := t.get.QueryRowContext(ctx, int64(k)).Scan(&v[0], &v[1], &v[2], &v[3])
	if errors.Is(err, sql.ErrNoRows) {
		return fingerprint{}, false, nil
	}
	if err != nil {
		return fingerprint{}, false, fmt.Errorf("spill store %s: %w", t.name, err)
	}
	return v, true, nil
}

func (t *fingerprintTable) Put(ctx context.Context, k uint64, v fingerprint) error {
	if _, ok := t.mem[k]; !ok && len(t.mem) >= t.limit {
		if err := t.flush(ctx); err != nil {
			return err
		}
	}
	t.mem[k] = v
	return nil
}

// Spilled reports whether any entry has been written to disk.
func (t *fingerprintTable) Spilled() bool { return t.filter != nil }

// wait waits for the spill in progress, if any, and returns its error.
func (t *fingerprintTable) wait() error {
	if t.writing == nil {
		return nil
	}
	err := <-t.writing
	t.writing, t.frozen = nil, nil
	return err
}

// flush spills the map: it waits for the spill before, freezes the map, adds its keys to the
// filter and starts writing it.
func (t *fingerprintTable) flush(ctx context.Context) error {
	if err := t.wait(); err != nil {
		return err
	}
	if t.filter == nil {
		db, err := t.spill.open()
		if err != nil {
			return err
		}
		if _, err := db.ExecContext(ctx, fmt.Sprintf(`CREATE TABLE %s (k INTEGER PRIMARY KEY, a INTEGER NOT NULL, b INTEGER NOT NULL, c INTEGER NOT NULL, d INTEGER NOT NULL)`, t.name)); err != nil {
			return fmt.Errorf("spill store %s: %w", t.name, err)
		}
		if t.get, err = db.PrepareContext(ctx, fmt.Sprintf(`SELECT a, b, c, d FROM %s WHERE k = ?`, t.name)); err != nil {
			return fmt.Errorf("spill store %s: %w", t.name, err)
		}
		t.filter = newBloom()
	}
	for k := range t.mem {
		t.filter.add(k)
	}
	// The new map grows as it fills: the frozen one is let go once written, so that memory
	// holds two full maps only for a moment, if ever.
	t.frozen, t.mem = t.mem, make(map[uint64]fingerprint)
	t.writing = make(chan error, 1)
	go func(m map[uint64]fingerprint, done chan<- error) { done <- t.write(ctx, m) }(t.frozen, t.writing)
	return nil
}

// write writes m to the table's rows in one transaction.
func (t *fingerprintTable) write(ctx context.Context, m map[uint64]fingerprint) error {
	tx, err := t.spill.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("spill store %s: %w", t.name, err)
	}
	defer func() { _ = tx.Rollback() }()
	// In key order: each insert lands next to the one before in SQLite's B-tree, instead of
	// on a page of its own (a fifth of a spill's time).
	// The entries are copied out with their values, in the map's order, then sorted: looking
	// each sorted key up in the map again was a quarter of a spill's time (a cache miss each).
	type entry struct {
		k uint64
		v fingerprint
	}
	entries := make([]entry, 0, len(m))
	for k, v := range m {
		entries = append(entries, entry{k, v})
	}
	slices.SortFunc(entries, func(a, b entry) int { return cmp.Compare(int64(a.k), int64(b.k)) })
	// spillRows rows a statement: a statement per row cost more than SQLite's work on it.
	var full *sql.Stmt
	args := make([]any, 0, 5*spillRows)
	for chunk := range slices.Chunk(entries, spillRows) {
		stmt := full
		if stmt == nil || len(chunk) < spillRows {
			if stmt, err = tx.PrepareContext(ctx, spillInsert(t.name, len(chunk))); err != nil {
				return fmt.Errorf("spill store %s: %w", t.name, err)
			}
			if len(chunk) == spillRows {
				full = stmt
			}
		}
		args = args[:0]
		for _, e := range chunk {
			args = append(args, int64(e.k), e.v[0], e.v[1], e.v[2], e.v[3])
		}
		if _, err := stmt.ExecContext(ctx, args...); err != nil {
			return fmt.Errorf("spill store %s: %w", t.name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("spill store %s: %w", t.name, err)
	}
	return nil
}

// spillRows is how many fingerprints one INSERT of a spill writes (five parameters each, well
// under SQLite's 32,766).
const spillRows = 200

// spillInsert is the INSERT of n fingerprints into table name.
func spillInsert(name string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "INSERT OR REPLACE INTO %s (k, a, b, c, d) VALUES ", name)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?,?,?,?,?)")
	}
	return b.String()
}

// spillDB is the temporary SQLite file behind the fingerprint tables, created on the first
// spill and removed by Close. Journaling and fsync are off: the file dies with the run.
// SQLite's own page cache is its default 2 MB.
type spillDB struct {
	dir  string
	path string
	db   *sql.DB
}

func (s *spillDB) open() (*sql.DB, error) {
	if s.db != nil {
		return s.db, nil
	}
	f, err := os.CreateTemp(s.dir, "fieldwork-validate-*.db")
	if err != nil {
		return nil, fmt.Errorf("create spill store: %w", err)
	}
	s.path = f.Name()
	_ = f.Close()
	dsn := "file:" + (&url.URL{Path: filepath.ToSlash(s.path)}).EscapedPath() +
		"?_pragma=journal_mode(OFF)&_pragma=synchronous(OFF)&_pragma=locking_mode(EXCLUSIVE)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		_ = os.Remove(s.path)
		return nil, fmt.Errorf("open spill store %s: %w", s.path, err)
	}
	db.SetMaxOpenConns(1)
	s.db = db
	return db, nil
}

// Close closes and deletes the spill file, if one was made.
func (s *spillDB) Close() error {
	if s.db == nil {
		return nil
	}
	err := s.db.Close()
	if rerr := os.Remove(s.path); err == nil && !errors.Is(rerr, os.ErrNotExist) {
		err = rerr
	}
	s.db = nil
	return err
}

// bloom is the filter over the spilled keys: a fixed 8 MiB Bloom filter (2²⁶ bits) with 3
// probes. With ten million keys on disk it answers "maybe" for about 5% of absent keys, so
// most new keys are known to be new without a disk read. The keys are 64-bit hashes already:
// the probes are taken from the key, mixed once (double hashing, h1 + i·h2), rather than by
// hashing its bytes again per probe, which was a tenth of a spilling lint's CPU time.
type bloom struct{ words []uint64 }

const bloomBits, bloomProbes = 1 << 26, 3

func newBloom() *bloom { return &bloom{words: make([]uint64, bloomBits/64)} }

// probes are the key's bloomProbes bit positions.
func probes(k uint64) [bloomProbes]uint32 {
	// splitmix64's finalizer: every bit of k moves both halves.
	k ^= k >> 30
	k *= 0xbf58476d1ce4e5b9
	k ^= k >> 27
	k *= 0x94d049bb133111eb
	k ^= k >> 31
	h1, h2 := uint32(k), uint32(k>>32)|1
	var p [bloomProbes]uint32
	for i := range p {
		p[i] = (h1 + uint32(i)*h2) % bloomBits
	}
	return p
}

func (b *bloom) add(k uint64) {
	for _, p := range probes(k) {
		b.words[p/64] |= 1 << (p % 64)
	}
}

func (b *bloom) mayContain(k uint64) bool {
	for _, p := range probes(k) {
		if b.words[p/64]&(1<<(p%64)) == 0 {
			return false
		}
	}
	return true
}
