// Package handlers holds the handlers bundled with fieldwork's reference consumer, chosen
// with `fieldwork consume --handler`:
//
//   - projection: the current state of each task in a table keyed by (consumer,
//     aggregate_id), applying an event only when its version is newer than the stored one;
//   - audit: an append-only activity feed, one row per event;
//   - webhook: a notifier that POSTs each event to a URL with an Idempotency-Key header and
//     records the delivery in the same transaction.
//
// Each is a consumer.Handler, written against the same small interface a team uses for its
// own handler. Their tables live in the dedup store's schema, next to the markers, so that
// the markers and the effects commit together; Migrate creates them (fieldwork consume
// --migrate), on PostgreSQL and on SQLite (where the schema is a table-name prefix, as for
// the marker table: fieldwork_task_state).
package handlers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fieldwork/fieldwork/consumer"
	"github.com/fieldwork/fieldwork/inbox"
	"github.com/fieldwork/fieldwork/internal/dedup"
)

// Names of the bundled handlers, as --handler takes them.
const (
	NameProjection = "projection"
	NameAudit      = "audit"
	NameWebhook    = "webhook"
)

// Names lists the bundled handlers.
var Names = []string{NameProjection, NameAudit, NameWebhook}

// Table names, before the schema is applied.
const (
	TableTaskState         = "task_state"
	TableAuditLog          = "audit_log"
	TableWebhookDeliveries = "webhook_deliveries"
)

// Config is what the bundled handlers need.
type Config struct {
	// Consumer is the marker consumer name; rows are keyed by it, so consumers sharing a
	// schema keep apart.
	Consumer string
	// Driver is the store's driver: "postgres" or "sqlite" (dedup.Store.Driver).
	Driver string
	// Schema is the store's schema (default dedup.DefaultSchema).
	Schema string
	// Logger receives the handlers' own logs (default: discard).
	Logger *slog.Logger
	// Registerer receives the handlers' own metrics (nil: not registered).
	Registerer prometheus.Registerer

	// WebhookURL is where the webhook handler POSTs (required for it).
	WebhookURL string
	// WebhookTimeout bounds one delivery attempt (default 10s).
	WebhookTimeout time.Duration
	// HTTPClient, when set, is used instead of a client with WebhookTimeout.
	HTTPClient *http.Client
}

// New returns the bundled handler called name.
func New(name string, cfg Config) (consumer.Handler, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if err := dedup.ValidateConsumer(cfg.Consumer); err != nil {
		return nil, err
	}
	d, err := newDialect(cfg.Driver, cfg.Schema)
	if err != nil {
		return nil, err
	}
	switch name {
	case NameProjection:
		return newProjection(cfg, d), nil
	case NameAudit:
		return newAudit(cfg, d), nil
	case NameWebhook:
		return newWebhook(cfg, d)
	}
	return nil, fmt.Errorf("unknown handler %q: want one of %s", name, strings.Join(Names, ", "))
}

// dialect is what the handlers' SQL needs of the store: its schema, and its driver's dialect
// (dedup.Dialect: the column types, the storage clause, whether a batch binds arrays, the
// missing-table error), which the driver provides.
type dialect struct {
	driver string
	schema string
	sql    dedup.Dialect
	// arrays says a batch is one statement binding arrays (unnest): the driver's
	// dedup.Dialect.Arrays.
	arrays bool
}

func newDialect(driver, schema string) (dialect, error) {
	if schema == "" {
		schema = dedup.DefaultSchema
	}
	if err := dedup.ValidateIdentifier("schema", schema); err != nil {
		return dialect{}, err
	}
	sql, err := dedup.DialectOf(driver)
	if err != nil {
		return dialect{}, err
	}
	return dialect{driver: driver, schema: schema, sql: sql, arrays: sql.Arrays}, nil
}

// Table returns the quoted name of a handler table in the store's schema, as the store
// names its own tables (dedup.TableName). name must be one of the Table constants.
func Table(driver, schema, name string) (string, error) {
	d, err := newDialect(driver, schema)
	if err != nil {
		return "", err
	}
	return d.table(name), nil
}

func (d dialect) table(name string) string { return dedup.TableName(d.driver, d.schema, name) }

// qualifiedIndex names an index of table name as DROP INDEX takes it (dedup.QualifiedIndexName).
func (d dialect) qualifiedIndex(name, suffix string) string {
	return dedup.QualifiedIndexName(d.driver, d.schema, name, suffix)
}

// ts turns a time into a bind parameter of the store's one time form (dedup.TimeArg); nil for
// the zero time.
func (d dialect) ts(t time.Time) any { return dedup.TimeArg(d.driver, t) }

// timestamp is the column type of a time (dedup.Dialect.Timestamp).
func (d dialect) timestamp() string { return d.sql.Timestamp }

// updatedInPlace is the storage clause of a table whose rows are rewritten often and whose
// indexed columns never change, the projection's (dedup.Dialect.UpdatedInPlace).
func (d dialect) updatedInPlace() string { return d.sql.UpdatedInPlace }

// exec runs statements in order.
func exec(ctx context.Context, tx *inbox.Tx, stmts ...string) error {
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// ErrTableMissing is wrapped by Check when a handler's table does not exist.
var ErrTableMissing = errors.New("handler table missing: run fieldwork consume with --migrate")

// checkTables probes each table with a query that reads no row.
func checkTables(ctx context.Context, tx *inbox.Tx, tables ...string) error {
	for _, t := range tables {
		if _, err := tx.Exec(ctx, "SELECT 1 FROM "+t+" WHERE 1 = 0"); err != nil {
			if dedup.IsTransient(err) {
				return err
			}
			if isMissingTable(tx.Driver(), err) {
				return fmt.Errorf("%s: %w", t, ErrTableMissing)
			}
			return fmt.Errorf("check %s: %w", t, err)
		}
	}
	return nil
}

// isMissingTable reports whether err says a table is missing, by the store's driver's own error
// codes (dedup.Dialect.IsMissingTable).
func isMissingTable(driver string, err error) bool {
	d, derr := dedup.DialectOf(driver)
	return derr == nil && d.IsMissingTable(err)
}
