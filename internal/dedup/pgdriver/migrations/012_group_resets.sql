-- The group journal also holds `groups reset` (docs/design.md §3.7): a reset moves a group's
-- committed offsets on one or more topics to an operator's target (earliest, latest, an offset,
-- a time, a shift), journaled like a skip, its offsets column naming each partition's topic,
-- and undone like one. The action check gains 'reset'. The journal's tables belong to the
-- schema and this step runs once per marker table of it: dropping the check and adding it
-- again leaves the same table however often it runs.
ALTER TABLE {{.GroupActions}} DROP CONSTRAINT IF EXISTS group_actions_action_check;
ALTER TABLE {{.GroupActions}} ADD CONSTRAINT group_actions_action_check CHECK (action IN ('skip', 'undo', 'reset'));
