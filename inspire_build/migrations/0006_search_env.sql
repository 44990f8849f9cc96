-- 0006_search_env: the agent search environment's corpus, and the sessions agents ran in it.

-- The searchable corpus: antecedents among distractors. Records of one work (a preprint and its
-- published twin) are merged into one row; corpus_ids holds every ID of every merged record.
CREATE TABLE corpus (
    paper_id           VARCHAR PRIMARY KEY,     -- the warehouse's paper_id where known, else the canonical ID
    title              VARCHAR,
    abstract           VARCHAR,
    year               INTEGER,
    authors            VARCHAR[],
    first_public_date  DATE,                    -- earliest over the merged records; null: undated, never shown
    date_precision     VARCHAR,                 -- day | month | year
    first_public_source VARCHAR,                -- arxiv | openalex | s2: which date won
    public_by          DATE,                    -- last day it may have become public: shown iff public_by < cutoff
    records            INTEGER NOT NULL,        -- records merged into this work
    origin             VARCHAR NOT NULL,        -- sandbox-world | openalex | snapshot
    added_at           TIMESTAMPTZ NOT NULL
);

CREATE TABLE corpus_ids (
    scheme    VARCHAR NOT NULL,
    value     VARCHAR NOT NULL,
    paper_id  VARCHAR NOT NULL,
    PRIMARY KEY (scheme, value)
);

-- One agent on one instance: what it submitted. Its tool calls are env_steps.
CREATE TABLE env_sessions (
    session_id   VARCHAR PRIMARY KEY,
    version_id   VARCHAR,
    instance_id  VARCHAR NOT NULL,
    agent        VARCHAR NOT NULL,
    backend      VARCHAR NOT NULL,              -- local | openalex
    budget       INTEGER NOT NULL,              -- tool calls allowed
    calls        INTEGER NOT NULL,
    status       VARCHAR NOT NULL,              -- submitted | abandoned
    ranking      VARCHAR[],
    started_at   TIMESTAMPTZ NOT NULL,
    finished_at  TIMESTAMPTZ NOT NULL
);

CREATE TABLE env_steps (
    session_id  VARCHAR NOT NULL,
    step        INTEGER NOT NULL,               -- 1, 2, ... in call order
    tool        VARCHAR NOT NULL,               -- search | read
    query       VARCHAR NOT NULL,               -- the search text, or the paper ID read
    k           INTEGER,
    exposed     VARCHAR[] NOT NULL,             -- the IDs the call showed the agent
    latency_ms  DOUBLE NOT NULL,
    PRIMARY KEY (session_id, step)
);
