-- A send batch's per-record positions (source offsets, event ids, target partitions, target
-- offsets) are written as one packed value (dedupdriver.SendBatch.Pack) instead of four
-- arrays: encoding the arrays element by element was the journal's largest cost in the
-- replaying process, and the database checked every element on the way in. The database
-- never reads inside either form. Rows written before keep their arrays, and are read as they
-- are; a row has either the packed value or the four arrays.
ALTER TABLE {{.ReplaySendBatches}} ADD COLUMN IF NOT EXISTS sends bytea;

ALTER TABLE {{.ReplaySendBatches}}
    ALTER COLUMN sends SET STORAGE EXTERNAL,
    ALTER COLUMN source_offsets DROP NOT NULL,
    ALTER COLUMN event_ids DROP NOT NULL,
    ALTER COLUMN target_partitions DROP NOT NULL,
    ALTER COLUMN target_offsets DROP NOT NULL;
