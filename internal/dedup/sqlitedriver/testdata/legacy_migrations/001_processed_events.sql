-- The migrations table (one line per marker table) and the marker table of
-- docs/design.md §3.4. SQLite has no schemas: the store's schema is a name prefix
-- (see doc.go). Timestamps are UTC text, 2006-01-02T15:04:05.000Z, which
-- sorts and compares in time order.
CREATE TABLE IF NOT EXISTS {{.Migrations}} (
    line       TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    name       TEXT    NOT NULL,
    applied_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (line, version)
);

CREATE TABLE {{.Table}} (
    consumer          TEXT    NOT NULL,
    event_id          TEXT    NOT NULL,
    processed_at      TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    topic             TEXT,
    partition         INTEGER,
    "offset"          INTEGER,
    aggregate_id      TEXT,
    aggregate_version INTEGER,
    PRIMARY KEY (consumer, event_id)
);

CREATE INDEX {{.ProcessedAtIndex}} ON {{.Table}} (processed_at);
