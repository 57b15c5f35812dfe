-- The replay journal keeps its sends in batches: one row per journal flush, source partition
-- and target topic, holding the per-record positions as parallel JSON arrays in source-offset
-- order (a row per record cost the replay most of its throughput). replay_sends of migration
-- 002 is replaced; it held no data outside development.
DROP TABLE IF EXISTS {{.ReplaySends}};

CREATE TABLE IF NOT EXISTS {{.ReplaySendBatches}} (
    id                INTEGER PRIMARY KEY,
    run_id            TEXT    NOT NULL REFERENCES {{.ReplayRuns}} (id) ON DELETE CASCADE,
    flush_id          TEXT    NOT NULL,
    source_topic      TEXT    NOT NULL,
    source_partition  INTEGER NOT NULL,
    first_offset      INTEGER NOT NULL,
    last_offset       INTEGER NOT NULL,
    target_topic      TEXT    NOT NULL,
    records           INTEGER NOT NULL,
    source_offsets    TEXT    NOT NULL,  -- JSON arrays, in source-offset order
    event_ids         TEXT    NOT NULL,
    target_partitions TEXT    NOT NULL,
    target_offsets    TEXT    NOT NULL,
    sent_at           TEXT    NOT NULL
);

CREATE INDEX IF NOT EXISTS {{.ReplaySendBatchesRunIndex}} ON {{.ReplaySendBatches}} (run_id, source_topic, source_partition, last_offset);

CREATE INDEX IF NOT EXISTS {{.ReplaySendBatchesSourceIndex}} ON {{.ReplaySendBatches}} (source_topic, source_partition, last_offset);
