-- Times in SQLite are UTC text in one layout, 2006-01-02T15:04:05.000000Z: microseconds, as
-- PostgreSQL's timestamptz keeps them and as the bundled handlers always wrote theirs. Before
-- this step the store's own tables held milliseconds (2006-01-02T15:04:05.000Z), which do not
-- sort among microsecond texts (the Z comes where a digit would), so the values of that layout
-- are rewritten here, each to the same instant with three more digits. Text of another form (a
-- table not made by fieldwork, in schema main) is left as it is and read as before.
--
-- The journal's tables belong to the schema and this step runs once per marker table of it:
-- a value already rewritten no longer matches, so running it again changes nothing.
UPDATE {{.Migrations}} SET applied_at = substr(applied_at, 1, 23) || '000Z'
WHERE applied_at GLOB '????-??-??T??:??:??.???Z';

UPDATE {{.Table}} SET processed_at = substr(processed_at, 1, 23) || '000Z'
WHERE processed_at GLOB '????-??-??T??:??:??.???Z';

UPDATE {{.ReplayRuns}} SET
    created_at = CASE WHEN created_at GLOB '????-??-??T??:??:??.???Z' THEN substr(created_at, 1, 23) || '000Z' ELSE created_at END,
    updated_at = CASE WHEN updated_at GLOB '????-??-??T??:??:??.???Z' THEN substr(updated_at, 1, 23) || '000Z' ELSE updated_at END,
    finished_at = CASE WHEN finished_at GLOB '????-??-??T??:??:??.???Z' THEN substr(finished_at, 1, 23) || '000Z' ELSE finished_at END
WHERE created_at GLOB '????-??-??T??:??:??.???Z' OR updated_at GLOB '????-??-??T??:??:??.???Z'
   OR finished_at GLOB '????-??-??T??:??:??.???Z';

UPDATE {{.ReplaySendBatches}} SET sent_at = substr(sent_at, 1, 23) || '000Z'
WHERE sent_at GLOB '????-??-??T??:??:??.???Z';

UPDATE {{.MarkerActions}} SET created_at = substr(created_at, 1, 23) || '000Z'
WHERE created_at GLOB '????-??-??T??:??:??.???Z';

UPDATE {{.GroupActions}} SET created_at = substr(created_at, 1, 23) || '000Z'
WHERE created_at GLOB '????-??-??T??:??:??.???Z';
