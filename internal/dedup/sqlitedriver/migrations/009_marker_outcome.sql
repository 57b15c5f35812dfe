-- A marker says what the consumer did with its event (docs/design.md §3.2, status `stale`):
-- outcome is NULL when the event was applied (or the marker was written by a fieldwork
-- before this migration, or by a hand: unknown), 'stale' when the handler deliberately
-- skipped it as older than what it already had (consume.Stale). The marker is written either
-- way, so that the event is never handled twice; the outcome tells a dead letter whose replay
-- took effect (resolved) from one whose replay was ignored (stale). The migration runs once
-- per marker table (its line), so a plain ADD COLUMN is enough.
ALTER TABLE {{.Table}} ADD COLUMN outcome TEXT CHECK (outcome IN ('stale'));
