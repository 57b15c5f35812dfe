-- The replay journal (docs/design.md §3.3): every executed `fieldwork replay` run,
-- its per-partition checkpoints and its acknowledged sends. The tables
-- belong to the schema (the name prefix), not to one marker table: every
-- migration line of the schema runs this migration, so it creates only
-- what is missing. Timestamps are UTC text, 2006-01-02T15:04:05.000Z.
CREATE TABLE IF NOT EXISTS {{.ReplayRuns}} (
    id            TEXT    NOT NULL PRIMARY KEY,
    operator      TEXT    NOT NULL,
    reason        TEXT    NOT NULL,
    selection     TEXT    NOT NULL,
    source_topics TEXT    NOT NULL,
    target        TEXT    NOT NULL,
    status        TEXT    NOT NULL
        CHECK (status IN ('planned', 'running', 'completed', 'interrupted', 'failed')),
    owner         TEXT,
    error         TEXT,
    selected      INTEGER NOT NULL DEFAULT 0,
    sent          INTEGER NOT NULL DEFAULT 0,
    quarantined   INTEGER NOT NULL DEFAULT 0,
    skipped       INTEGER NOT NULL DEFAULT 0,
    created_at    TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    updated_at    TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    finished_at   TEXT
);

CREATE INDEX IF NOT EXISTS {{.ReplayRunsCreatedIndex}} ON {{.ReplayRuns}} (created_at);

CREATE TABLE IF NOT EXISTS {{.ReplayCheckpoints}} (
    run_id        TEXT    NOT NULL REFERENCES {{.ReplayRuns}} (id) ON DELETE CASCADE,
    topic         TEXT    NOT NULL,
    partition     INTEGER NOT NULL,
    start_offset  INTEGER NOT NULL,
    end_offset    INTEGER NOT NULL,
    acked_through INTEGER NOT NULL,
    PRIMARY KEY (run_id, topic, partition)
);

CREATE TABLE IF NOT EXISTS {{.ReplaySends}} (
    run_id           TEXT    NOT NULL REFERENCES {{.ReplayRuns}} (id) ON DELETE CASCADE,
    source_topic     TEXT    NOT NULL,
    source_partition INTEGER NOT NULL,
    source_offset    INTEGER NOT NULL,
    event_id         TEXT,
    target_topic     TEXT    NOT NULL,
    target_partition INTEGER NOT NULL,
    target_offset    INTEGER NOT NULL,
    sent_at          TEXT    NOT NULL,
    PRIMARY KEY (run_id, source_topic, source_partition, source_offset)
);

CREATE INDEX IF NOT EXISTS {{.ReplaySendsSourceIndex}} ON {{.ReplaySends}} (source_topic, source_partition, source_offset);
