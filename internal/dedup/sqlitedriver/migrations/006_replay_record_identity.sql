-- The journal knows which record it sent, not only where. A topic deleted and recreated (or a
-- `fieldwork dev` broker restarted over the same file) puts other records at the same topic,
-- partition and offset, which the journal took for the records it had sent. From now on:
--
-- * each run journals the Kafka topic ID of each topic it reads, as the brokers gave it when
--   the run was planned (replay_run_topics: a row per run and topic with a known ID);
-- * each send batch journals its records' Kafka timestamps (replay_send_times: a JSON array
--   of Unix milliseconds, parallel to the batch's source_offsets).
--
-- A journaled send counts as a replay of the record now at its coordinates only when what
-- both know agrees: the topic ID, the event id, the timestamp (dedupdriver.SendBatch.SentRecord).
-- Runs journaled before this migration have no row in either table: they keep meaning what they
-- always did, narrowed by the event id they always recorded. Their sends count for the record
-- at their coordinates when its event id is theirs, and `replay resume` cannot tell whether
-- their topic was recreated since.
--
-- Tables rather than columns: SQLite has no ADD COLUMN IF NOT EXISTS, and this migration runs
-- once per marker table of the schema (prefix), over the one journal they share.
CREATE TABLE IF NOT EXISTS {{.ReplayRunTopics}} (
    run_id   TEXT NOT NULL REFERENCES {{.ReplayRuns}} (id) ON DELETE CASCADE,
    topic    TEXT NOT NULL,
    topic_id TEXT NOT NULL,  -- as Kafka's tools print it (URL-safe base64, no padding)
    PRIMARY KEY (run_id, topic)
);

CREATE TABLE IF NOT EXISTS {{.ReplaySendTimes}} (
    batch_id          INTEGER NOT NULL PRIMARY KEY REFERENCES {{.ReplaySendBatches}} (id) ON DELETE CASCADE,
    source_timestamps TEXT    NOT NULL
);
