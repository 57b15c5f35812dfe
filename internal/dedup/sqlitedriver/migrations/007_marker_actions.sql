-- The journal of the executed `processed prune` and `processed forget` (docs/design.md §3.3):
-- who deleted markers, why, which (the selection as JSON), how many (the counts as JSON, the
-- deleted markers also as a number), when. A row per action,
-- written once the markers are gone. The table belongs to the schema (the name prefix), shared
-- by its marker tables like the replay journal (marker_table says whose markers), so the
-- migration creates only what is missing. Timestamps are UTC text, 2006-01-02T15:04:05.000Z.
CREATE TABLE IF NOT EXISTS {{.MarkerActions}} (
    id           INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    action       TEXT    NOT NULL CHECK (action IN ('prune', 'forget')),
    marker_table TEXT    NOT NULL,
    operator     TEXT    NOT NULL,
    reason       TEXT    NOT NULL,
    selection    TEXT    NOT NULL,
    counts       TEXT    NOT NULL,
    deleted      INTEGER NOT NULL,
    error        TEXT,
    created_at   TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
