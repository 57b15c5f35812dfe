package cmdutil

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/output"
)

// Need names the clients a command's run works with besides the printer, which every run gets.
type Need uint8

const (
	// NeedKafka connects to the cluster, bounded by --connect-timeout.
	NeedKafka Need = 1 << iota
	// NeedStore opens the dedup store (see Factory.Store).
	NeedStore
	// NeedJournal opens the dedup store and checks that it is migrated, for the replay journal.
	NeedJournal
)

// Clients are what a command's run works with: the printer for -o and, as Need asks, the
// dedup store and the cluster. Close closes what was opened.
type Clients struct {
	Streams *output.Streams
	Printer *output.Printer
	Store   *dedup.Store
	Kafka   *kafka.Cluster
	// Naming is the --schema/--table/--column-* values, for the hints of StoreError.
	Naming  dedup.Options
	closers []func()
}

// Open opens the clients need names, in a fixed order (printer, store, cluster), so that a
// usage error of -o comes before any connection. On an error it closes what it opened.
func (f *Factory) Open(ctx context.Context, need Need) (*Clients, error) {
	c := &Clients{Streams: f.Streams, Naming: f.Dedup}
	if err := c.open(ctx, f, need); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (c *Clients) open(ctx context.Context, f *Factory, need Need) error {
	var err error
	if c.Printer, err = f.Printer(); err != nil {
		return err
	}
	if need&(NeedStore|NeedJournal) != 0 {
		if c.Store, err = f.Store(ctx); err != nil {
			return err
		}
		st := c.Store
		c.closers = append(c.closers, func() { st.Close() })
		NoteTableShape(f.Streams, st)
		if need&NeedJournal != 0 {
			if err := st.Verify(ctx); err != nil {
				return StoreError(err, c.Naming)
			}
		}
	}
	if need&NeedKafka != 0 {
		if c.Kafka, err = f.Kafka(ctx); err != nil {
			return err
		}
		c.closers = append(c.closers, c.Kafka.Close)
	}
	return nil
}

// Close closes the clients, the last opened first.
func (c *Clients) Close() {
	for i := len(c.closers) - 1; i >= 0; i-- {
		c.closers[i]()
	}
	c.closers = nil
}

// RunWith ends a command's RunE once its flags are parsed into opts, like Run: runF when a
// test set it (it opens nothing), else run with the clients need names, opened before it and
// closed after. An error of the store (a missing table, an unreachable database, …) gets its
// exit code and hint here, once for every command (see StoreError).
func RunWith[O any](cmd *cobra.Command, f *Factory, need Need, opts O, runF func(context.Context, O) error, run func(context.Context, O, *Clients) error) error {
	if runF != nil {
		return runF(cmd.Context(), opts)
	}
	c, err := f.Open(cmd.Context(), need)
	if err != nil {
		return err
	}
	defer c.Close()
	return StoreError(run(cmd.Context(), opts, c), c.Naming)
}
