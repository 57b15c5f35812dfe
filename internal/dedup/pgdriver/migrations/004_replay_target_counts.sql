-- Two costs of the replay journal measured on a 200,000-record replay:
--
-- 1. PostgreSQL compressed every send batch's arrays (pglz) on insert, which cost it more CPU
--    than the whole replay spent elsewhere in the database. The arrays are stored out of line
--    uncompressed from now on (rows written before keep their compression).
-- 2. The counts per target partition that a replay's summary and `replay show` print were
--    summed over every send of the run. They are kept per run and target partition instead,
--    added to in the transaction that journals the sends; the counts of runs journaled before
--    this migration are summed once here.
ALTER TABLE {{.ReplaySendBatches}}
    ALTER COLUMN source_offsets SET STORAGE EXTERNAL,
    ALTER COLUMN event_ids SET STORAGE EXTERNAL,
    ALTER COLUMN target_partitions SET STORAGE EXTERNAL,
    ALTER COLUMN target_offsets SET STORAGE EXTERNAL;

CREATE TABLE IF NOT EXISTS {{.ReplayTargetCounts}} (
    run_id           text    NOT NULL REFERENCES {{.ReplayRuns}} (id) ON DELETE CASCADE,
    target_topic     text    NOT NULL,
    target_partition integer NOT NULL,
    records          bigint  NOT NULL,
    PRIMARY KEY (run_id, target_topic, target_partition)
);

INSERT INTO {{.ReplayTargetCounts}} (run_id, target_topic, target_partition, records)
SELECT b.run_id, b.target_topic, tp, count(*)
FROM {{.ReplaySendBatches}} b CROSS JOIN LATERAL unnest(b.target_partitions) AS tp
GROUP BY 1, 2, 3
ON CONFLICT DO NOTHING;
