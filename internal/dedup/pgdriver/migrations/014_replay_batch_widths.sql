-- The journal's lookup of which records a replay sent (dlq list --status, a replay's statuses)
-- reads the batches whose range of source offsets holds a record. By the index of source
-- topic, partition and last offset alone it read every batch from the record to the end of
-- its partition, of every run: a lookup near the start of a partition read nearly all of its
-- batches, and a replay of n dead letters replayed before read of the order of n² of them.
-- With the widest batch of the partition known (this index: one probe), a batch that holds
-- offset o has its last offset within [o, o + that width], and the read is bounded by the
-- offsets asked for.
CREATE INDEX IF NOT EXISTS {{.ReplaySendBatchesWidthIndex}} ON {{.ReplaySendBatches}} (source_topic, source_partition, (last_offset - first_offset));
