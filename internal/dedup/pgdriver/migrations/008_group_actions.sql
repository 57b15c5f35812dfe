-- The journal of the executed `groups skip` and `groups skip --undo` (docs/design.md §3.4):
-- who moved a consumer group's committed offsets, why, on which topic, from which offsets to
-- which (offsets, JSON: a partition's old and new offset and the records parked in between),
-- and where the parked records went. An undo is a row of its own that names the skip it
-- undoes (undoes), so that a skip is undone at most once. The table belongs to the schema,
-- like the replay journal and marker_actions.
CREATE TABLE IF NOT EXISTS {{.GroupActions}} (
    id                text        NOT NULL PRIMARY KEY,
    action            text        NOT NULL CHECK (action IN ('skip', 'undo')),
    group_name        text        NOT NULL,
    topic             text        NOT NULL,
    dead_letter_topic text        NOT NULL,
    operator          text        NOT NULL,
    reason            text        NOT NULL,
    offsets           text        NOT NULL,  -- JSON: [{"partition", "old_offset", "new_offset", "parked"}]
    parked            bigint      NOT NULL,
    undoes            text        UNIQUE,    -- the skip this undo restored
    created_at        timestamptz NOT NULL DEFAULT now()
);
