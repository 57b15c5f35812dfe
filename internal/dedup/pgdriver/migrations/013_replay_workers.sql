-- A replay run shared by workers (`fieldwork replay resume RUN --worker`, docs/design.md §3.3):
-- its partitions are taken by the members of a consumer group named after the run, so each
-- source partition of such a run has a row here: which worker holds it (host:pid, NULL when
-- none does) and the counts of the records behind its checkpoint, which the worker holding it
-- writes with the checkpoint. The run's own counts are their sum. A run without rows here is
-- driven by one process, as before.
--
-- A table rather than columns of replay_checkpoints, to match the SQLite driver (which has no
-- ADD COLUMN IF NOT EXISTS, and runs this migration once per marker table of the schema).
CREATE TABLE IF NOT EXISTS {{.ReplayWorkers}} (
    run_id      text        NOT NULL REFERENCES {{.ReplayRuns}} (id) ON DELETE CASCADE,
    topic       text        NOT NULL,
    partition   integer     NOT NULL,
    owner       text,
    selected    bigint      NOT NULL DEFAULT 0,
    sent        bigint      NOT NULL DEFAULT 0,
    quarantined bigint      NOT NULL DEFAULT 0,
    skipped     bigint      NOT NULL DEFAULT 0,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, topic, partition)
);
