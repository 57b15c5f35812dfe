-- The journal of the executed `groups skip` and `groups skip --undo` (docs/design.md §3.4):
-- who moved a consumer group's committed offsets, why, on which topic, from which offsets to
-- which (offsets, JSON: a partition's old and new offset and the records parked in between),
-- and where the parked records went. An undo is a row of its own that names the skip it
-- undoes (undoes), so that a skip is undone at most once. The table belongs to the schema
-- (the name prefix), like the replay journal and marker_actions. Timestamps are UTC text,
-- 2006-01-02T15:04:05.000Z.
CREATE TABLE IF NOT EXISTS {{.GroupActions}} (
    id                TEXT    NOT NULL PRIMARY KEY,
    action            TEXT    NOT NULL CHECK (action IN ('skip', 'undo')),
    group_name        TEXT    NOT NULL,
    topic             TEXT    NOT NULL,
    dead_letter_topic TEXT    NOT NULL,
    operator          TEXT    NOT NULL,
    reason            TEXT    NOT NULL,
    offsets           TEXT    NOT NULL,
    parked            INTEGER NOT NULL,
    undoes            TEXT    UNIQUE,
    created_at        TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
