-- The version guard (inbox.GuardVersions): per consumer and aggregate, the highest aggregate
-- version the consumer claimed, beside its marker table (<table>_versions). A claim with the
-- guard raises it and reads, in the same statement, what it was before (prior_version, written
-- by the same update: RETURNING sees only the new row), so that an event of a version the
-- consumer already has, or older, is claimed as stale: marked (outcome 'stale'), not applied.
-- The rows commit or roll back with the claim's transaction, as the markers do.
CREATE TABLE IF NOT EXISTS {{.Versions}} (
    consumer      text   NOT NULL,
    aggregate_id  text   NOT NULL,
    version       bigint NOT NULL,
    prior_version bigint,
    PRIMARY KEY (consumer, aggregate_id)
);
