-- The replay journal keeps its sends in batches: one row per journal flush, source partition
-- and target topic, holding the per-record positions as parallel arrays in source-offset
-- order. A row per record cost the replay most of its throughput (every send was a heap tuple
-- and two index entries); a row per batch costs a few statements per flush. replay_sends of
-- migration 002 (a row per record) is replaced; it held no data outside development.
DROP TABLE IF EXISTS {{.ReplaySends}};

CREATE TABLE IF NOT EXISTS {{.ReplaySendBatches}} (
    id                bigserial   PRIMARY KEY,
    run_id            text        NOT NULL REFERENCES {{.ReplayRuns}} (id) ON DELETE CASCADE,
    flush_id          text        NOT NULL,  -- the flush that wrote it: a retried flush writes once
    source_topic      text        NOT NULL,
    source_partition  integer     NOT NULL,
    first_offset      bigint      NOT NULL,  -- source_offsets[1]
    last_offset       bigint      NOT NULL,  -- source_offsets[records]
    target_topic      text        NOT NULL,
    records           integer     NOT NULL,
    source_offsets    bigint[]    NOT NULL,  -- ascending
    event_ids         text[]      NOT NULL,  -- '' when the record had none
    target_partitions integer[]   NOT NULL,
    target_offsets    bigint[]    NOT NULL,
    sent_at           timestamptz NOT NULL   -- the batch's last acknowledgement
);

CREATE INDEX IF NOT EXISTS {{.ReplaySendBatchesRunIndex}} ON {{.ReplaySendBatches}} (run_id, source_topic, source_partition, last_offset);

-- `dlq list --status replayed` asks by source record across runs.
CREATE INDEX IF NOT EXISTS {{.ReplaySendBatchesSourceIndex}} ON {{.ReplaySendBatches}} (source_topic, source_partition, last_offset);
