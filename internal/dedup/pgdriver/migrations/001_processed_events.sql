-- The migrations table, shared by every store in the schema (one line per
-- marker table), and the marker table of docs/design.md §3.4.
CREATE SCHEMA IF NOT EXISTS {{.Schema}};

CREATE TABLE IF NOT EXISTS {{.Migrations}} (
    line       text        NOT NULL,
    version    integer     NOT NULL,
    name       text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (line, version)
);

-- consumer and event_id are opaque identifiers: byte order ("C") compares
-- fastest, matches the order Claim sorts a batch in, and cannot change
-- under an operating-system collation upgrade (which would corrupt the
-- primary key index).
CREATE TABLE {{.Table}} (
    consumer          text COLLATE "C" NOT NULL,
    event_id          text COLLATE "C" NOT NULL,
    processed_at      timestamptz NOT NULL DEFAULT now(),
    topic             text,
    partition         integer,
    "offset"          bigint,
    aggregate_id      text,
    aggregate_version bigint,
    PRIMARY KEY (consumer, event_id)
);

CREATE INDEX {{.ProcessedAtIndex}} ON {{.Table}} (processed_at);
