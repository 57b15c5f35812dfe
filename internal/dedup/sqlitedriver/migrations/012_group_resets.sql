-- The group journal also holds `groups reset` (docs/design.md §3.7): a reset moves a group's
-- committed offsets on one or more topics to an operator's target (earliest, latest, an offset,
-- a time, a shift), journaled like a skip, its offsets column naming each partition's topic,
-- and undone like one. The action check gains 'reset'. SQLite cannot change a table's check,
-- so the table is built again under a new name with every row, and takes the old name. The
-- journal's tables belong to the schema and this step runs once per marker table of it: a
-- second run builds the same table again.
DROP TABLE IF EXISTS {{.GroupActionsNext}};
CREATE TABLE {{.GroupActionsNext}} (
    id                TEXT    NOT NULL PRIMARY KEY,
    action            TEXT    NOT NULL CHECK (action IN ('skip', 'undo', 'reset')),
    group_name        TEXT    NOT NULL,
    topic             TEXT    NOT NULL,
    dead_letter_topic TEXT    NOT NULL,
    operator          TEXT    NOT NULL,
    reason            TEXT    NOT NULL,
    offsets           TEXT    NOT NULL,
    parked            INTEGER NOT NULL,
    undoes            TEXT    UNIQUE,
    created_at        TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f000Z', 'now'))
);
INSERT INTO {{.GroupActionsNext}} (id, action, group_name, topic, dead_letter_topic, operator, reason, offsets, parked, undoes, created_at)
SELECT id, action, group_name, topic, dead_letter_topic, operator, reason, offsets, parked, undoes, created_at FROM {{.GroupActions}};
DROP TABLE {{.GroupActions}};
ALTER TABLE {{.GroupActionsNext}} RENAME TO {{.GroupActions}};
