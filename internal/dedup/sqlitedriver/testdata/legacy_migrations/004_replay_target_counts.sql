-- The counts per target partition that a replay's summary and `replay show` print are kept
-- per run and target partition, added to in the transaction that journals the sends, rather
-- than summed over every send of the run; the counts of runs journaled before this migration
-- are summed once here.
CREATE TABLE IF NOT EXISTS {{.ReplayTargetCounts}} (
    run_id           TEXT    NOT NULL REFERENCES {{.ReplayRuns}} (id) ON DELETE CASCADE,
    target_topic     TEXT    NOT NULL,
    target_partition INTEGER NOT NULL,
    records          INTEGER NOT NULL,
    PRIMARY KEY (run_id, target_topic, target_partition)
);

INSERT OR IGNORE INTO {{.ReplayTargetCounts}} (run_id, target_topic, target_partition, records)
SELECT b.run_id, b.target_topic, tp.value, count(*)
FROM {{.ReplaySendBatches}} b, json_each(b.target_partitions) AS tp
GROUP BY 1, 2, 3;
