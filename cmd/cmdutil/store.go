package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/output"
)

// StoreDeps are what the commands of the dedup store need from the factory besides the
// Clients their run gets: the streams, the store for a lookup a flag may turn on (the dlq
// statuses), and the naming flags for hints. Nothing opens before the run.
type StoreDeps struct {
	Streams *output.Streams
	Store   func(context.Context) (*dedup.Store, error)
	// Naming points at the factory's --schema/--table/--column-* values, for messages.
	Naming *dedup.Options
}

// NewStoreDeps takes the store's dependencies from f.
func NewStoreDeps(f *Factory) StoreDeps {
	return StoreDeps{Streams: f.Streams, Store: f.Store, Naming: &f.Dedup}
}

// Names returns the store-naming flags' values (zero Options when there are none, in tests).
func (d StoreDeps) Names() dedup.Options {
	if d.Naming == nil {
		return dedup.Options{}
	}
	return *d.Naming
}

// RegisterStoreFlags registers on fs, one of cmd's flag sets, the flags that name the marker
// table: the schema, the table, --preset (completed with the presets' names) and, for
// read-only queries on an existing table of the same shape, its column names.
func RegisterStoreFlags(cmd *cobra.Command, fs *pflag.FlagSet, o *dedup.Options) {
	fs.StringVar(&o.Schema, "schema", dedup.DefaultSchema, `schema of the marker table (on SQLite a table-name prefix; "main" means none)`)
	fs.StringVar(&o.Table, "table", dedup.DefaultTable, "marker table")
	c, d := &o.Columns, dedup.DefaultColumns
	for _, col := range []struct {
		v    *string
		name string
		def  string
	}{
		{&c.Consumer, "consumer", d.Consumer},
		{&c.EventID, "event-id", d.EventID},
		{&c.ProcessedAt, "processed-at", d.ProcessedAt},
		{&c.Topic, "topic", d.Topic},
		{&c.Partition, "partition", d.Partition},
		{&c.Offset, "offset", d.Offset},
		{&c.AggregateID, "aggregate-id", d.AggregateID},
		{&c.AggregateVersion, "aggregate-version", d.AggregateVersion},
	} {
		fs.StringVar(col.v, "column-"+col.name, col.def, "column holding the "+strings.ReplaceAll(col.name, "-", " ")+", on an existing table")
	}
	fs.StringVar(&c.ProcessedAtUnit, "column-processed-at-unit", "", "how an integer processed-at column counts time since the epoch: ms (the default) or s")
	fs.StringVar(&o.Preset, "preset", "", "read the processed-message table of another library, created by its own DDL on PostgreSQL: "+strings.Join(dedup.PresetNames(), ", "))
	_ = cmd.RegisterFlagCompletionFunc("preset", cobra.FixedCompletions(dedup.PresetNames(), cobra.ShellCompDirectiveNoFileComp))
}

// NoteTableShape says on stderr, once a store is open, what the marker table is when it is not
// fieldwork's own: the library of its preset (and how its table was found, when --table did not
// name it) and the columns it lacks (read as absent).
func NoteTableShape(s *output.Streams, st *dedup.Store) {
	absent := st.Absent()
	p := st.Preset()
	if p == nil && len(absent) == 0 {
		return
	}
	msg := st.Table()
	if p != nil {
		msg += " is " + p.Library + "'s table"
		if found := st.Found(); found != "" {
			msg += " (" + found + "; --table names another)"
		}
	}
	if len(absent) > 0 {
		if p != nil {
			msg += ";"
		}
		msg += " it has no " + strings.Join(absent, ", ") + " column: shown as -"
		if slices.Contains(absent, "consumer") {
			msg += " (the consumer is the table's name)"
		}
	}
	Note(s, msg)
}

// NameFlags writes the --schema and --table flags that differ from the defaults, for hints.
func NameFlags(o dedup.Options) string {
	var b strings.Builder
	if o.Schema != "" && o.Schema != dedup.DefaultSchema {
		b.WriteString(" --schema " + o.Schema)
	}
	if o.Table != "" && o.Table != dedup.DefaultTable {
		b.WriteString(" --table " + o.Table)
	}
	return b.String()
}

// StoreError gives an error from package dedup its exit code and, where the operator has
// something to do, a hint: a malformed DSN, an invalid name or an unusable consumer or event
// id is a usage error (2); an unreachable database, refused credentials or an SQLite file that
// does not exist ("no such store") a connect error (4); a missing table says which `fieldwork
// db migrate` creates it (1). Messages from dedup never hold a password.
func StoreError(err error, o dedup.Options) error {
	if err == nil || fwerr.KindOf(err) != fwerr.KindError {
		return err
	}
	var (
		ident *dedup.InvalidIdentifierError
		dsn   *dedup.InvalidDSNError
		input *dedup.InvalidInputError
		col   *dedup.MissingColumnError
		conn  *dedup.ConnectError
		vm    *dedup.VersionMismatchError
		none  *dedup.NoStoreError
		amb   *dedup.AmbiguousTableError
	)
	switch {
	case errors.As(err, &ident), errors.As(err, &dsn), errors.As(err, &input), errors.As(err, &col), errors.As(err, &amb):
		return fwerr.Wrap(fwerr.KindUsage, err)
	case errors.As(err, &conn):
		return fwerr.Connect(err)
	case errors.As(err, &none):
		// A mistyped path is the likely cause: a new, empty store would make every event
		// look unprocessed.
		return fwerr.Connect(fmt.Errorf("%w\nhint: check the path in --dsn (or FIELDWORK_DSN, the context's dsn); a new, empty store is created only by `fieldwork db migrate`", err))
	case errors.As(err, &vm) && vm.Current > vm.Latest:
		return err
	case errors.Is(err, dedup.ErrNotMigrated):
		if o.CustomColumns() {
			return fmt.Errorf("%w\nhint: --table and the --column-* flags name an existing table: check --schema and --table (db migrate creates only fieldwork's own table)", err)
		}
		return fmt.Errorf("%w\nhint: run `fieldwork db migrate%s` with the same --dsn to create it", err, NameFlags(o))
	}
	return err
}

// CheckConsumer validates a --consumer value before anything connects.
func CheckConsumer(c string) error {
	if err := dedup.ValidateConsumer(c); err != nil {
		return fwerr.Usagef("--consumer: %v", err)
	}
	return nil
}

// ConsumerNamer is implemented by the options of a command that takes --consumer: RunWith
// calls WarnUnknownConsumer with it once the store is open, so that no command has to.
type ConsumerNamer interface {
	// NamedConsumer is the --consumer value ("" when none was given).
	NamedConsumer() string
}

// WarnUnknownConsumer warns on stderr when consumer has no markers at all in st, naming the
// consumers that do (dedup.Store.UnknownConsumer): a mistyped --consumer otherwise reads as
// "every event is missing". A failed lookup says nothing (the command's own query reports
// the store's errors).
func WarnUnknownConsumer(ctx context.Context, s *output.Streams, st *dedup.Store, consumer string) {
	if consumer == "" || st == nil {
		return
	}
	if msg, err := st.UnknownConsumer(ctx, consumer); err == nil && msg != "" {
		Warn(s, msg)
	}
}
