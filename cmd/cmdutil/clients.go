package cmdutil

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/output"
	"github.com/fieldwork/fieldwork/internal/schema"
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
	// NeedNewStore opens the dedup store, creating an SQLite file that does not exist (see
	// Factory.CreateStore): only for the commands that create a store (`db migrate`).
	NeedNewStore
	// OwnSchemaProblems says the run answers for the payloads it could not decode itself
	// (`consume` dead-letters them and logs each in its own log format): RunWith adds no
	// SchemaProblems warning after it.
	OwnSchemaProblems
)

// Clients are what a command's run works with: the printer for -o and, as Need asks, the
// dedup store and the cluster. Close closes what was opened.
type Clients struct {
	Streams *output.Streams
	Printer *output.Printer
	Store   *dedup.Store
	Kafka   *kafka.Cluster
	// Schemas decodes registry-framed payloads; always set (without a registry it detects only).
	Schemas *schema.Decoder
	// Naming is the --schema/--table/--column-* values, for the hints of StoreError.
	Naming dedup.Options
	// Now is the factory's clock (a test may swap it).
	Now     func() time.Time
	closers []func()
}

// Open opens the clients need names, in a fixed order (printer, store, cluster), so that a
// usage error of -o comes before any connection. On an error it closes what it opened.
func (f *Factory) Open(ctx context.Context, need Need) (*Clients, error) {
	c := &Clients{Streams: f.Streams, Naming: f.StoreNaming(), Now: f.Now}
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
	if c.Schemas, err = f.Schemas(); err != nil {
		return err
	}
	if need&(NeedStore|NeedJournal|NeedNewStore) != 0 {
		open := f.Store
		if need&NeedNewStore != 0 {
			open = f.CreateStore
		}
		if c.Store, err = open(ctx); err != nil {
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
	if n, ok := any(opts).(ConsumerNamer); ok {
		WarnUnknownConsumer(cmd.Context(), c.Streams, c.Store, n.NamedConsumer())
	}
	err = run(cmd.Context(), opts, c)
	err = NameHint(cmd.Context(), c.Kafka, err)
	if err == nil && need&OwnSchemaProblems == 0 {
		err = SchemaProblems(c.Streams, c.Schemas)
	}
	return StoreError(err, c.Naming)
}

// SchemaProblems ends a run that read payloads (docs/design.md §3.6): credentials the schema
// registry refused fail it (exit 4, the message names the registry, never the secret); a
// registry that did not answer, or framed payloads with no registry configured, are warnings:
// the run showed those payloads' bytes instead.
func SchemaProblems(s *output.Streams, d *schema.Decoder) error {
	for _, e := range d.Problems() {
		switch e.Problem {
		case schema.ProblemDenied:
			return e.Kinded()
		case schema.ProblemNoRegistry:
			Warn(s, fmt.Sprintf("payloads framed for a schema registry (%s schema %s, …) were not decoded: pass --schema-registry URL", payloadName(e), e.Ref))
		default:
			Warn(s, e.Error()+"; its payloads are shown as bytes")
		}
	}
	return nil
}

func payloadName(e *schema.Error) string {
	if e.Key {
		return "key"
	}
	return "value"
}
