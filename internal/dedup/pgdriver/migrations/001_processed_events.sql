-- The migrations table, shared by every store in the schema (one line per
-- marker table), and the marker table of DESIGN 3.4.
CREATE SCHEMA IF NOT EXISTS {{.Schema}};

CREATE TABLE IF NOT EXISTS {{.Migrations}} (
    line       text        NOT NULL,
    version    integer     NOT NULL,
    name       text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (line, version)
);

CREATE TABLE {{.Table}} (
    consumer          text        NOT NULL,
    event_id          text        NOT NULL,
    processed_at      timestamptz NOT NULL DEFAULT now(),
    topic             text,
    partition         integer,
    "offset"          bigint,
    aggregate_id      text,
    aggregate_version bigint,
    PRIMARY KEY (consumer, event_id)
);

CREATE INDEX {{.ProcessedAtIndex}} ON {{.Table}} (processed_at);
