-- The replay journal (docs/design.md §3.3): every executed `fieldwork replay` run,
-- its per-partition checkpoints and its acknowledged sends. The tables
-- belong to the schema, not to one marker table: every migration line of
-- the schema runs this migration, so it creates only what is missing.
CREATE TABLE IF NOT EXISTS {{.ReplayRuns}} (
    id            text        NOT NULL PRIMARY KEY,
    operator      text        NOT NULL,
    reason        text        NOT NULL,
    selection     text        NOT NULL,  -- JSON
    source_topics text        NOT NULL,  -- comma-separated (topic names hold no comma)
    target        text        NOT NULL,
    status        text        NOT NULL
        CHECK (status IN ('planned', 'running', 'completed', 'interrupted', 'failed')),
    owner         text,                  -- host:pid of the process driving the run
    error         text,
    selected      bigint      NOT NULL DEFAULT 0,
    sent          bigint      NOT NULL DEFAULT 0,
    quarantined   bigint      NOT NULL DEFAULT 0,
    skipped       bigint      NOT NULL DEFAULT 0,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    finished_at   timestamptz
);

CREATE INDEX IF NOT EXISTS {{.ReplayRunsCreatedIndex}} ON {{.ReplayRuns}} (created_at);

-- One row per source partition: the inclusive range fixed at plan time and
-- the contiguous prefix of it that is done (start_offset - 1: nothing).
CREATE TABLE IF NOT EXISTS {{.ReplayCheckpoints}} (
    run_id        text    NOT NULL REFERENCES {{.ReplayRuns}} (id) ON DELETE CASCADE,
    topic         text    NOT NULL,
    partition     integer NOT NULL,
    start_offset  bigint  NOT NULL,
    end_offset    bigint  NOT NULL,
    acked_through bigint  NOT NULL,
    PRIMARY KEY (run_id, topic, partition)
);

-- One row per acknowledged send; a record sent twice by one run (resumed
-- after a crash) keeps its first row.
CREATE TABLE IF NOT EXISTS {{.ReplaySends}} (
    run_id           text        NOT NULL REFERENCES {{.ReplayRuns}} (id) ON DELETE CASCADE,
    source_topic     text        NOT NULL,
    source_partition integer     NOT NULL,
    source_offset    bigint      NOT NULL,
    event_id         text,
    target_topic     text        NOT NULL,
    target_partition integer     NOT NULL,
    target_offset    bigint      NOT NULL,
    sent_at          timestamptz NOT NULL,
    PRIMARY KEY (run_id, source_topic, source_partition, source_offset)
);

-- `dlq list --status replayed` asks by source record across runs.
CREATE INDEX IF NOT EXISTS {{.ReplaySendsSourceIndex}} ON {{.ReplaySends}} (source_topic, source_partition, source_offset);
