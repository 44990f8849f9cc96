-- 0009_env_sessions_boundary: tool-server sessions persist while open, bound to a token's hash;
-- a read looks an ID up by index whether or not it exists.
-- One session per (run_name, instance_id) in the tool server: one budget, one final submission.
-- DuckDB cannot add a NOT NULL column, nor alter twice in a transaction over a primary key, so
-- the table is rebuilt with its rows.

CREATE TABLE env_sessions_0009 (
    session_id       VARCHAR PRIMARY KEY,
    run_name         VARCHAR,                   -- the tool server's run; null for `inspire agent run`
    version_id       VARCHAR,
    instance_id      VARCHAR NOT NULL,
    agent            VARCHAR NOT NULL,
    backend          VARCHAR NOT NULL,          -- local | openalex
    budget           INTEGER NOT NULL,          -- tool calls allowed
    calls            INTEGER NOT NULL,
    status           VARCHAR NOT NULL,          -- open | submitted | abandoned
    ranking          VARCHAR[],
    token_sha256     VARCHAR,                   -- sha256 of the session token; never the token
    scores_revealed  BOOLEAN NOT NULL DEFAULT false,  -- a debugging server showed it its scores
    started_at       TIMESTAMPTZ NOT NULL,
    finished_at      TIMESTAMPTZ                -- null while open
);

INSERT INTO env_sessions_0009 (
    session_id, version_id, instance_id, agent, backend, budget, calls, status, ranking,
    started_at, finished_at
)
SELECT session_id, version_id, instance_id, agent, backend, budget, calls, status, ranking,
    started_at, finished_at
FROM env_sessions;

DROP TABLE env_sessions;

ALTER TABLE env_sessions_0009 RENAME TO env_sessions;

-- DuckDB scans a two-column key; a read finds an ID's value by this index instead, so the lookup
-- costs the same whether the ID is known, withheld or unknown.
CREATE INDEX corpus_ids_value ON corpus_ids (value);
