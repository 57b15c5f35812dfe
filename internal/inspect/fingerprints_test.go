package inspect

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestFingerprintTableSpills drives a table with a tiny memory limit through several spills
// and checks that every key reads back its newest value, from memory or from disk, and that
// the spill file is gone after Close. The spills are written behind the Puts: a Get meets
// keys in the map being written and on disk alike.
func TestFingerprintTableSpills(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	spill := &spillDB{dir: dir}
	tab := newFingerprintTable("events", 8, spill)
	const n = 1000
	for k := uint64(1); k <= n; k++ {
		if err := tab.Put(ctx, k*0x9E3779B97F4A7C15, fingerprint{int64(k), 1, 2, 3}); err != nil {
			t.Fatal(err)
		}
	}
	if !tab.Spilled() {
		t.Fatal("no spill with 1000 keys and a limit of 8")
	}
	if len(tab.mem) > 8 || len(tab.frozen) > 8 {
		t.Fatalf("memory holds %d entries and %d being spilled, limit 8", len(tab.mem), len(tab.frozen))
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
	if _, ok, err := tab.Get(ctx, 42); ok || err != nil {
		t.Fatalf("absent key found: %v %v", ok, err)
	}
	if err := tab.wait(); err != nil { // the spill still being written
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "fieldwork-validate-*"))
	if len(files) != 1 {
		t.Fatalf("spill files = %v", files)
	}
	if err := spill.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(files[0]); !os.IsNotExist(err) {
		t.Fatalf("spill file left behind: %v", err)
	}
}

func TestFingerprintTableStaysInMemoryUnderLimit(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	spill := &spillDB{dir: dir}
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
	b := newBloom()
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
