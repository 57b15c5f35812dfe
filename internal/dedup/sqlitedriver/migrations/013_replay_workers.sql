-- A replay run shared by workers (`fieldwork replay resume RUN --worker`, docs/design.md §3.3):
-- its partitions are taken by the members of a consumer group named after the run, so each
-- source partition of such a run has a row here: which worker holds it (host:pid, NULL when
-- none does) and the counts of the records behind its checkpoint, which the worker holding it
-- writes with the checkpoint. The run's own counts are their sum. A run without rows here is
-- driven by one process, as before.
--
-- A table rather than columns of replay_checkpoints: SQLite has no ADD COLUMN IF NOT EXISTS,
-- and this migration runs once per marker table of the schema (prefix).
CREATE TABLE IF NOT EXISTS {{.ReplayWorkers}} (
    run_id      TEXT    NOT NULL REFERENCES {{.ReplayRuns}} (id) ON DELETE CASCADE,
    topic       TEXT    NOT NULL,
    partition   INTEGER NOT NULL,
    owner       TEXT,
    selected    INTEGER NOT NULL DEFAULT 0,
    sent        INTEGER NOT NULL DEFAULT 0,
    quarantined INTEGER NOT NULL DEFAULT 0,
    skipped     INTEGER NOT NULL DEFAULT 0,
    updated_at  TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (run_id, topic, partition)
);
