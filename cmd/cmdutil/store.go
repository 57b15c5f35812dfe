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
	// Naming points at the command group's --schema/--table/--column-* values, for messages.
	Naming *dedup.Options
}

// NewStoreDeps takes the store's dependencies from f (a factory derived with WithStoreNaming
// by the command group that binds the naming flags).
func NewStoreDeps(f *Factory) StoreDeps {
	return StoreDeps{Streams: f.Streams, Store: f.Store, Naming: f.naming}
}

// Names returns the store-naming flags' values (zero Options when there are none, in tests).
func (d StoreDeps) Names() dedup.Options {
	if d.Naming == nil {
		return dedup.Options{}
	}
	return *d.Naming
}

// storeFlag is one of the flags that name the marker table and the field of dedup.Options it
// sets: RegisterStoreFlags binds them, StoreNamingOf reads them back from parsed flags.
type storeFlag struct {
	name, def, usage string
	field            func(*dedup.Options) *string
}

// storeFlags are the store-naming flags: the schema, the table, the column names of an
// existing table, and --preset.
func storeFlags() []storeFlag {
	d := dedup.DefaultColumns
	flags := []storeFlag{
		{"schema", dedup.DefaultSchema, `schema of the marker table (on SQLite a table-name prefix; "main" means none)`, func(o *dedup.Options) *string { return &o.Schema }},
		{"table", dedup.DefaultTable, "marker table", func(o *dedup.Options) *string { return &o.Table }},
	}
	for _, col := range []struct {
		name, def string
		field     func(*dedup.ColumnNames) *string
	}{
		{"consumer", d.Consumer, func(c *dedup.ColumnNames) *string { return &c.Consumer }},
		{"event-id", d.EventID, func(c *dedup.ColumnNames) *string { return &c.EventID }},
		{"processed-at", d.ProcessedAt, func(c *dedup.ColumnNames) *string { return &c.ProcessedAt }},
		{"topic", d.Topic, func(c *dedup.ColumnNames) *string { return &c.Topic }},
		{"partition", d.Partition, func(c *dedup.ColumnNames) *string { return &c.Partition }},
		{"offset", d.Offset, func(c *dedup.ColumnNames) *string { return &c.Offset }},
		{"aggregate-id", d.AggregateID, func(c *dedup.ColumnNames) *string { return &c.AggregateID }},
		{"aggregate-version", d.AggregateVersion, func(c *dedup.ColumnNames) *string { return &c.AggregateVersion }},
	} {
		field := col.field
		flags = append(flags, storeFlag{"column-" + col.name, col.def, "column holding the " + strings.ReplaceAll(col.name, "-", " ") + ", on an existing table",
			func(o *dedup.Options) *string { return field(&o.Columns) }})
	}
	return append(flags,
		storeFlag{"column-processed-at-unit", "", "how an integer processed-at column counts time since the epoch: ms (the default) or s", func(o *dedup.Options) *string { return &o.Columns.ProcessedAtUnit }},
		storeFlag{"preset", "", "read the processed-message table of another library, created by its own DDL on PostgreSQL: " + strings.Join(dedup.PresetNames(), ", "), func(o *dedup.Options) *string { return &o.Preset }},
	)
}

// RegisterStoreFlags registers on fs, one of cmd's flag sets, the flags that name the marker
// table, bound to o, which the command owns: the schema, the table, --preset (completed with
// the presets' names) and, for read-only queries on an existing table of the same shape, its
// column names. The command hands its subcommands f.WithStoreNaming(o).
// StoreFlagAnnotation marks the store-naming flags, which help lists once (`fieldwork help
// environment`) instead of in the help of every command that takes them.
const StoreFlagAnnotation = "fieldwork_store"

func RegisterStoreFlags(cmd *cobra.Command, fs *pflag.FlagSet, o *dedup.Options) {
	for _, fl := range storeFlags() {
		fs.StringVar(fl.field(o), fl.name, fl.def, fl.usage)
		_ = fs.SetAnnotation(fl.name, StoreFlagAnnotation, []string{"true"})
	}
	_ = cmd.RegisterFlagCompletionFunc("preset", cobra.FixedCompletions(dedup.PresetNames(), cobra.ShellCompDirectiveNoFileComp))
}

// StoreNamingOf reads the store-naming flags back from a parsed flag set (a command's Flags(),
// its parents' persistent ones included); a flag fs lacks is left at its zero, the default.
// For completion, which has the parsed command, not its options.
func StoreNamingOf(fs *pflag.FlagSet) dedup.Options {
	var o dedup.Options
	for _, fl := range storeFlags() {
		if v := fs.Lookup(fl.name); v != nil {
			*fl.field(&o) = v.Value.String()
		}
	}
	return o
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
// A second pass over its own result (a command's, then RunWith's) adds nothing.
func StoreError(err error, o dedup.Options) error {
	var done hintedError
	if err == nil || fwerr.KindOf(err) != fwerr.KindError || errors.As(err, &done) {
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
	case dedup.IsDenied(err):
		return fwerr.Denied(fmt.Errorf("not authorized: %w\nhint: the database role (or, for SQLite, this process) lacks a privilege the command needs: reading the markers needs USAGE on the schema and SELECT on the tables, consume and the journaled actions also INSERT, UPDATE and DELETE, db migrate CREATE", err))
	case errors.As(err, &vm) && vm.Current > vm.Latest:
		return err
	case errors.Is(err, dedup.ErrNotMigrated):
		if o.CustomColumns() {
			return hintedError{fmt.Errorf("%w\nhint: --table and the --column-* flags name an existing table: check --schema and --table (db migrate creates only fieldwork's own table)", err)}
		}
		return hintedError{fmt.Errorf("%w\nhint: run `fieldwork db migrate%s` with the same --dsn to create it", err, NameFlags(o))}
	}
	return err
}

// hintedError is an error StoreError gave its hint.
type hintedError struct{ error }

func (e hintedError) Unwrap() error { return e.error }

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
