package ahead

import (
	"errors"
	"slices"
	"sync/atomic"
	"testing"
)

// square is work that squares each item and notes, per goroutine, how many batches it did.
func square(worked *atomic.Int64) func() func(*Batch[int]) {
	return func() func(*Batch[int]) {
		return func(b *Batch[int]) {
			for i, v := range b.Items {
				b.Items[i] = v * v
			}
			worked.Add(1)
		}
	}
}

// TestOrderKept: whatever the workers, the stealing and the batch size, Emit gets every item
// worked on, once, in the order added, on the reader's goroutine.
func TestOrderKept(t *testing.T) {
	for _, c := range []struct {
		name           string
		workers, batch int
		steal          bool
	}{
		{"one worker in order", 1, 7, false},
		{"one worker and the reader", 1, 7, true},
		{"three workers and the reader", 3, 5, true},
		{"no worker asked for: one all the same", 0, 4, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var worked atomic.Int64
			var got []int
			r := New(Options[int]{Batch: c.batch, Workers: c.workers, Depth: 2, Steal: c.steal,
				Work: square(&worked),
				Emit: func(b *Batch[int]) error { got = append(got, b.Items...); return nil }})
			defer r.Close()
			const n = 10_001
			for i := range n {
				if err := r.Add(i); err != nil {
					t.Fatal(err)
				}
			}
			if err := r.Flush(); err != nil {
				t.Fatal(err)
			}
			if len(got) != n {
				t.Fatalf("emitted %d items, want %d", len(got), n)
			}
			for i, v := range got {
				if v != i*i {
					t.Fatalf("item %d is %d, want %d", i, v, i*i)
				}
			}
			if want := int64((n + c.batch - 1) / c.batch); worked.Load() != want {
				t.Fatalf("%d batches worked on, want %d", worked.Load(), want)
			}
		})
	}
}

// TestEmitErrorStops: Emit's error is returned by Add and Flush from then on, and no later
// batch is emitted.
func TestEmitErrorStops(t *testing.T) {
	stop := errors.New("stop")
	var worked atomic.Int64
	var got []int
	r := New(Options[int]{Batch: 3, Workers: 2, Depth: 2, Steal: true, Work: square(&worked),
		Emit: func(b *Batch[int]) error {
			for _, v := range b.Items {
				if v == 25 {
					return stop
				}
				got = append(got, v)
			}
			return nil
		}})
	defer r.Close()
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		err = r.Add(i)
	}
	if err == nil {
		err = r.Flush()
	}
	if !errors.Is(err, stop) {
		t.Fatalf("error %v, want %v", err, stop)
	}
	if want := []int{0, 1, 4, 9, 16}; !slices.Equal(got, want) {
		t.Fatalf("emitted %v, want %v", got, want)
	}
	if err := r.Add(1); !errors.Is(err, stop) {
		t.Fatalf("Add after the error: %v", err)
	}
}

// TestCloseDropsAndReleases: Close with batches handed out and not emitted returns once the
// workers have, emits nothing more, and leaves no item held.
func TestCloseDropsAndReleases(t *testing.T) {
	release := make(chan struct{})
	var emitted atomic.Int64
	r := New(Options[*int]{Batch: 2, Workers: 1, Depth: 4,
		Work: func() func(*Batch[*int]) {
			return func(*Batch[*int]) { <-release }
		},
		Emit: func(b *Batch[*int]) error { emitted.Add(int64(len(b.Items))); return nil }})
	for range 6 {
		v := 1
		if err := r.Add(&v); err != nil {
			t.Fatal(err)
		}
	}
	close(release)
	r.Close()
	r.Close()
	v := 1
	if err := r.Add(&v); !errors.Is(err, ErrClosed) {
		t.Fatalf("Add after Close: %v, want ErrClosed", err)
	}
	if err := r.Flush(); err != nil {
		t.Fatalf("Flush after Close: %v", err)
	}
	if emitted.Load() != 0 {
		t.Fatalf("%d items emitted after Close", emitted.Load())
	}
	if r.pending != nil && len(r.pending) != 0 {
		t.Fatalf("%d batches still pending", len(r.pending))
	}
}
