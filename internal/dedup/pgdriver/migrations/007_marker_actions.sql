-- The journal of the executed `processed prune` and `processed forget` (docs/design.md §3.3):
-- who deleted markers, why, which (the selection as JSON), how many (the counts as JSON, the
-- deleted markers also as a number), when. A row per action,
-- written once the markers are gone. The table belongs to the schema, shared by its marker
-- tables like the replay journal (marker_table says whose markers), so the migration creates
-- only what is missing.
CREATE TABLE IF NOT EXISTS {{.MarkerActions}} (
    id           bigserial   NOT NULL PRIMARY KEY,
    action       text        NOT NULL CHECK (action IN ('prune', 'forget')),
    marker_table text        NOT NULL,
    operator     text        NOT NULL,
    reason       text        NOT NULL,
    selection    text        NOT NULL,  -- JSON
    counts       text        NOT NULL,  -- JSON: what was found and deleted
    deleted      bigint      NOT NULL,
    error        text,                  -- set when the action failed part way
    created_at   timestamptz NOT NULL DEFAULT now()
);
