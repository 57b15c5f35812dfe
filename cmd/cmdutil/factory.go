// Package cmdutil holds what fieldwork's commands share: the factory of lazily built clients,
// the flag sets more than one command registers, confirmation, error mapping, progress lines
// and the formatting helpers of tables.
package cmdutil

import (
	"context"
	"os"
	"time"

	"github.com/fieldwork/fieldwork/internal/config"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/output"
	"github.com/fieldwork/fieldwork/internal/schema"
)

// Factory hands commands their streams and, lazily, their connections: nothing dials a broker
// or a database until a command's run function asks, so --help and usage errors never do.
//
// Commands only read it. It holds no flag of a command: the root command binds its persistent
// flags into Settings (RootSettings), and a command group that names the marker table binds
// --schema, --table and --column-* into its own dedup.Options and hands its subcommands a
// factory derived for them (WithStoreNaming).
type Factory struct {
	Streams *output.Streams
	Getenv  func(string) string

	// Clock is the commands' clock; nil is the system's (see Now).
	Clock func() time.Time

	settings *Settings      // the root's flags; never nil in a factory from NewFactory or TestFactory
	naming   *dedup.Options // the store-naming flags (WithStoreNaming); nil: the defaults

	warned map[string]bool // the connection warnings already printed in this run

	schemas *schema.Decoder // the run's decoder of registry-framed payloads, once built
}

// Settings are the values of the root command's persistent flags, and whether the command line
// was parsed. The root command, which owns those flags, is their one writer (RootSettings);
// commands read them with Factory.Settings.
type Settings struct {
	Conn           config.Flags
	ConfigPath     string
	OutputFormat   string
	Wide           bool // --wide: table cells whole, not fitted to the terminal
	ConnectTimeout time.Duration

	// Running is set by the root command once flags and arguments are parsed; an error before
	// that is a usage error.
	Running bool
}

// NewFactory returns a factory on the process's streams and environment.
func NewFactory() *Factory {
	return &Factory{Streams: output.System(), Getenv: os.Getenv, settings: &Settings{}}
}

// RootSettings is where the root command binds its persistent flags: for package root only,
// the one writer of the settings every command reads.
func RootSettings(f *Factory) *Settings {
	if f.settings == nil {
		f.settings = &Settings{}
	}
	return f.settings
}

// Settings are the root's flag values, a copy (zero in a factory without them).
func (f *Factory) Settings() Settings {
	if f.settings == nil {
		return Settings{}
	}
	return *f.settings
}

// WithStoreNaming is f for the commands of a group that binds the store-naming flags (see
// RegisterStoreFlags) into naming: the store they open and the hints of its errors use its
// values as parsed. f itself is unchanged; the new factory copies f's streams, environment and
// clock as they are now, so set them before building the commands.
func (f *Factory) WithStoreNaming(naming *dedup.Options) *Factory {
	g := *f
	g.naming = naming
	return &g
}

// StoreNaming is the store-naming flags' values (zero Options, the defaults, when the command
// has none).
func (f *Factory) StoreNaming() dedup.Options {
	if f.naming == nil {
		return dedup.Options{}
	}
	return *f.naming
}

// Now is the time by the factory's clock: what --since 2h and the like count back from.
func (f *Factory) Now() time.Time {
	if f.Clock != nil {
		return f.Clock()
	}
	return time.Now()
}

// ConfigFile is the path of the config file (--config, else config.DefaultPath) and the file
// as loaded (empty when it does not exist).
func (f *Factory) ConfigFile() (string, *config.File, error) {
	path := f.Settings().ConfigPath
	if path == "" {
		path = config.DefaultPath(f.Getenv)
	}
	file, err := config.Load(path)
	if err != nil {
		return path, nil, fwerr.Wrap(fwerr.KindUsage, err)
	}
	return path, file, nil
}

// Connection resolves flags, environment and the config file.
func (f *Factory) Connection() (config.Connection, error) {
	_, file, err := f.ConfigFile()
	if err != nil {
		return config.Connection{}, err
	}
	conn, err := config.Resolve(f.Settings().Conn, f.Getenv, file)
	if err != nil {
		if fwerr.KindOf(err) == fwerr.KindError { // a setting that does not read; a context that is not defined keeps its kind
			err = fwerr.Wrap(fwerr.KindUsage, err)
		}
		return config.Connection{}, err
	}
	for _, w := range conn.Warnings {
		if !f.warned[w] {
			if f.warned == nil {
				f.warned = map[string]bool{}
			}
			f.warned[w] = true
			Warn(f.Streams, w)
		}
	}
	return conn, nil
}

// StoreConfigured reports whether a DSN is configured (flag, environment or context), without
// opening anything.
func (f *Factory) StoreConfigured() (bool, error) {
	conn, err := f.Connection()
	if err != nil {
		return false, err
	}
	return conn.DSN != "", nil
}

// Kafka connects to the configured cluster, bounded by --connect-timeout.
func (f *Factory) Kafka(ctx context.Context) (*kafka.Cluster, error) {
	return f.kafka(ctx, f.Settings().ConnectTimeout)
}

func (f *Factory) kafka(ctx context.Context, timeout time.Duration) (*kafka.Cluster, error) {
	conn, err := f.Connection()
	if err != nil {
		return nil, err
	}
	return kafka.Connect(ctx, conn, timeout)
}

// Schemas is the run's decoder of registry-framed payloads (docs/design.md §3.6), built once:
// without a registry configured it detects framing only. It dials nothing until a payload
// needs a schema; each request is bounded by --connect-timeout.
func (f *Factory) Schemas() (*schema.Decoder, error) {
	if f.schemas != nil {
		return f.schemas, nil
	}
	conn, err := f.Connection()
	if err != nil {
		return nil, err
	}
	c := schema.Config{URL: conn.Registry.URL, Username: conn.Registry.Username, Password: conn.RegistryPassword,
		Token: conn.RegistryToken, Timeout: f.Settings().ConnectTimeout}
	if c.URL != "" && (conn.Registry.TLS.CAFile != "" || conn.Registry.TLS.CertFile != "" || conn.Registry.TLS.InsecureSkipVerify) {
		if c.TLS, err = kafka.TLSConfig(conn.Registry.TLS, ""); err != nil {
			return nil, err
		}
	}
	d, err := schema.New(c)
	if err != nil {
		return nil, err
	}
	f.schemas = d
	return d, nil
}

// Printer returns a printer for the -o format (table on a terminal, JSON Lines when piped).
func (f *Factory) Printer() (*output.Printer, error) {
	set := f.Settings()
	format, err := output.ParseFormat(set.OutputFormat, f.Streams.OutTTY)
	if err != nil {
		return nil, fwerr.Wrap(fwerr.KindUsage, err)
	}
	p := output.NewPrinter(f.Streams, format)
	p.Wide = set.Wide
	return p, nil
}

// Store opens the dedup store named by the connection's DSN and the store-naming flags, bounded by
// --connect-timeout. It does not check the migration version (db migrate must open an empty
// database); queries on a missing table fail with dedup.ErrNotMigrated, which StoreError
// explains. It creates nothing: an SQLite file that does not exist is refused, "no such store"
// (see CreateStore). Errors carry their exit code: no DSN, a malformed DSN or an invalid
// identifier is a usage error (2), an unreachable database, refused credentials or a store
// that does not exist a connect error (4); no message holds the password.
func (f *Factory) Store(ctx context.Context) (*dedup.Store, error) {
	return f.openStore(ctx, false, f.Settings().ConnectTimeout)
}

// CreateStore is Store for the commands that create a store (`db migrate`, `consume
// --migrate`): an SQLite file that does not exist is created.
func (f *Factory) CreateStore(ctx context.Context) (*dedup.Store, error) {
	return f.openStore(ctx, true, f.Settings().ConnectTimeout)
}

func (f *Factory) openStore(ctx context.Context, create bool, timeout time.Duration) (*dedup.Store, error) {
	conn, err := f.Connection()
	if err != nil {
		return nil, err
	}
	if conn.DSN == "" {
		return nil, fwerr.Usagef("no dedup store configured: pass --dsn (postgres://… or sqlite:PATH), set FIELDWORK_DSN, or give the context a dsn")
	}
	opts := f.StoreNaming()
	opts.ConnectTimeout = timeout
	opts.Password = conn.DSNPassword
	opts.Create = create
	st, err := dedup.Open(ctx, conn.DSN, opts)
	if err != nil {
		return nil, StoreError(err, f.StoreNaming())
	}
	return st, nil
}

// TestFactory returns a factory on test streams (output.Test: buffers, not terminals) and an
// empty environment, for tests that build commands.
func TestFactory() *Factory {
	s, _, _, _ := output.Test()
	return &Factory{Streams: s, Getenv: func(string) string { return "" }, settings: &Settings{}}
}
