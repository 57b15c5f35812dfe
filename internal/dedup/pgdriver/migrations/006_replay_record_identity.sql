-- The journal knows which record it sent, not only where. A topic deleted and recreated (or a
-- sandbox broker restarted over the same store) puts other records at the same topic,
-- partition and offset, which the journal took for the records it had sent. From now on:
--
-- * each run journals the Kafka topic ID of each topic it reads, as the brokers gave it when
--   the run was planned (this table: a row per run and topic with a known ID);
-- * each send batch journals its records' Kafka timestamps beside their event ids, in version
--   2 of the packed sends (dedupdriver.SendBatch.Pack), in the sends column of migration 005.
--
-- A journaled send counts as a replay of the record now at its coordinates only when what
-- both know agrees: the topic ID, the event id, the timestamp (dedupdriver.SendBatch.SentRecord).
-- Runs journaled before this migration have no row here and their batches no timestamps: they
-- keep meaning what they always did, narrowed by the event id they always recorded. Their sends
-- count for the record at their coordinates when its event id is theirs, and `replay resume`
-- cannot tell whether their topic was recreated since.
--
-- A table rather than a column of replay_runs, to match the SQLite driver (which has no ADD
-- COLUMN IF NOT EXISTS, and runs this migration once per marker table of the schema).
CREATE TABLE IF NOT EXISTS {{.ReplayRunTopics}} (
    run_id   text NOT NULL REFERENCES {{.ReplayRuns}} (id) ON DELETE CASCADE,
    topic    text NOT NULL,
    topic_id text NOT NULL,  -- as Kafka's tools print it (URL-safe base64, no padding)
    PRIMARY KEY (run_id, topic)
);
