-- 0001_initial: the four layers of the warehouse.
--   1. raw responses  (raw_http, llm_calls)
--   2. parsed entities (papers, paper_ids, "references")
--   3. pipeline state  (targets, briefs, audit_findings, grades)
--   4. split versions  (split_versions, instances, qrels) and evaluation (eval_runs, eval_scores)
-- "references" is an SQL keyword, so it is always written in double quotes.

-- 1. Raw responses: every HTTP response, keyed by the normalised request with secrets removed.
CREATE TABLE raw_http (
    request_key  VARCHAR PRIMARY KEY,          -- sha256 of method + redacted URL + redacted body
    source       VARCHAR NOT NULL,             -- openalex | s2 | arxiv | llm
    method       VARCHAR NOT NULL,
    url          VARCHAR NOT NULL,             -- redacted: no api_key, mailto or tokens
    request_body VARCHAR,                      -- redacted
    status       INTEGER NOT NULL,
    headers      JSON,
    body         BLOB,
    body_sha256  VARCHAR NOT NULL,
    origin       VARCHAR NOT NULL,             -- live | sandbox | import:<cassette>
    fetched_at   TIMESTAMPTZ NOT NULL
);

CREATE TABLE llm_calls (
    call_key     VARCHAR PRIMARY KEY,          -- sha256 of backend, model, prompt hash, input hash
    backend      VARCHAR NOT NULL,             -- openai | rules
    model        VARCHAR NOT NULL,
    prompt_name  VARCHAR NOT NULL,
    prompt_hash  VARCHAR NOT NULL,
    input_hash   VARCHAR NOT NULL,
    output       JSON NOT NULL,
    tokens_in    INTEGER NOT NULL DEFAULT 0,
    tokens_out   INTEGER NOT NULL DEFAULT 0,
    latency_ms   DOUBLE NOT NULL DEFAULT 0,
    cost_usd     DOUBLE NOT NULL DEFAULT 0,
    created_at   TIMESTAMPTZ NOT NULL
);

-- 2. Parsed entities.
CREATE TABLE papers (
    paper_id              VARCHAR PRIMARY KEY,  -- canonical key, e.g. openalex:W123 or arxiv:2310.00826
    title                 VARCHAR,
    abstract              VARCHAR,
    year                  INTEGER,
    venue                 VARCHAR,
    authors               VARCHAR[],
    fields                VARCHAR[],
    reference_count       INTEGER,
    arxiv_v1_date         DATE,
    openalex_date         DATE,
    s2_date               DATE,
    date_precision        VARCHAR,              -- day | month | year, of the winning date
    first_public_date     DATE,
    first_public_source   VARCHAR,              -- arxiv | openalex | s2: which date won
    sources               VARCHAR[] NOT NULL,
    updated_at            TIMESTAMPTZ NOT NULL
);

CREATE TABLE paper_ids (
    scheme    VARCHAR NOT NULL,                 -- arxiv | doi | openalex | s2 | corpusid
    value     VARCHAR NOT NULL,                 -- canonical form (see inspire_build/ids.py)
    paper_id  VARCHAR NOT NULL,
    source    VARCHAR NOT NULL,                 -- which source reported the ID
    PRIMARY KEY (scheme, value)
);

CREATE TABLE "references" (
    target_id       VARCHAR NOT NULL,
    ref_key         VARCHAR NOT NULL,           -- stable key of the merged entry within its target
    paper_id        VARCHAR,                    -- null while unresolved
    title           VARCHAR,
    year            INTEGER,
    ids             JSON NOT NULL,              -- every ID the sources gave for this entry
    sources         VARCHAR[] NOT NULL,         -- which sources listed it
    match_rule      VARCHAR,                    -- doi | arxiv | openalex | s2 | title_year
    match_score     DOUBLE,
    contexts        VARCHAR[],
    intents         VARCHAR[],
    is_influential  BOOLEAN,
    status          VARCHAR,                    -- antecedent | after_cutoff | after_target | no_date | unresolved
    reason          VARCHAR,
    PRIMARY KEY (target_id, ref_key)
);

-- 3. Pipeline state.
CREATE TABLE targets (
    split              VARCHAR NOT NULL,
    paper_id           VARCHAR NOT NULL,
    title              VARCHAR,
    first_public_date  DATE,
    cutoff_date        DATE,
    status             VARCHAR NOT NULL,        -- candidate | accepted | excluded
    reason             VARCHAR,
    updated_at         TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (split, paper_id)
);

CREATE TABLE briefs (
    brief_id     VARCHAR PRIMARY KEY,
    target_id    VARCHAR NOT NULL,
    attempt      INTEGER NOT NULL,
    text         VARCHAR NOT NULL,
    word_count   INTEGER NOT NULL,
    prompt_name  VARCHAR NOT NULL,
    prompt_hash  VARCHAR NOT NULL,
    backend      VARCHAR NOT NULL,
    model        VARCHAR NOT NULL,
    status       VARCHAR,                       -- accepted | rejected
    reason       VARCHAR,
    created_at   TIMESTAMPTZ NOT NULL
);

CREATE TABLE audit_findings (
    brief_id  VARCHAR NOT NULL,
    "check"   VARCHAR NOT NULL,                 -- lexical | identity | retrieval | mechanism
    passed    BOOLEAN NOT NULL,
    level     VARCHAR NOT NULL,                 -- none | partial | full
    detail    VARCHAR NOT NULL,
    PRIMARY KEY (brief_id, "check")
);

CREATE TABLE grades (
    target_id    VARCHAR NOT NULL,
    paper_id     VARCHAR NOT NULL,
    tier         INTEGER NOT NULL CHECK (tier BETWEEN 1 AND 3),
    role         VARCHAR NOT NULL,
    rationale    VARCHAR NOT NULL,
    backend      VARCHAR NOT NULL,
    model        VARCHAR NOT NULL,
    prompt_hash  VARCHAR NOT NULL,
    PRIMARY KEY (target_id, paper_id)
);

-- 4. Split versions: immutable once written. Old versions stay queryable.
CREATE TABLE split_versions (
    version_id     VARCHAR PRIMARY KEY,
    split          VARCHAR NOT NULL,
    label          VARCHAR,
    config_hash    VARCHAR NOT NULL,
    code_version   VARCHAR NOT NULL,
    prompt_hashes  JSON NOT NULL,
    models         JSON NOT NULL,
    counts         JSON NOT NULL,
    created_at     TIMESTAMPTZ NOT NULL
);

CREATE TABLE instances (
    version_id     VARCHAR NOT NULL,
    instance_id    VARCHAR NOT NULL,            -- opaque: reveals nothing about the target
    target_id      VARCHAR NOT NULL,            -- evaluator-only
    brief_id       VARCHAR NOT NULL,
    brief          VARCHAR NOT NULL,
    cutoff_date    DATE NOT NULL,
    n_antecedents  INTEGER NOT NULL,
    PRIMARY KEY (version_id, instance_id)
);

CREATE TABLE qrels (
    version_id   VARCHAR NOT NULL,
    instance_id  VARCHAR NOT NULL,
    paper_id     VARCHAR NOT NULL,
    tier         INTEGER NOT NULL CHECK (tier BETWEEN 1 AND 3),
    role         VARCHAR NOT NULL,
    PRIMARY KEY (version_id, instance_id, paper_id)
);

-- Evaluation.
CREATE TABLE eval_runs (
    run_id            VARCHAR PRIMARY KEY,
    version_id        VARCHAR,                  -- null when scored against a TREC qrels file
    name              VARCHAR NOT NULL,
    run_sha256        VARCHAR NOT NULL,
    params            JSON NOT NULL,            -- gains, bootstrap seed and samples, ...
    n_instances       INTEGER NOT NULL,
    has_trajectories  BOOLEAN NOT NULL,
    created_at        TIMESTAMPTZ NOT NULL
);

CREATE TABLE eval_scores (
    run_id       VARCHAR NOT NULL,
    instance_id  VARCHAR NOT NULL,              -- '*' is the mean over instances
    metric       VARCHAR NOT NULL,
    value        DOUBLE,
    ci_low       DOUBLE,                        -- 95% bootstrap interval, on '*' rows only
    ci_high      DOUBLE,
    PRIMARY KEY (run_id, instance_id, metric)
);

CREATE VIEW latest_split_versions AS
SELECT * EXCLUDE (rank_in_split)
FROM (
    SELECT *, row_number() OVER (PARTITION BY split ORDER BY created_at DESC, version_id DESC)
              AS rank_in_split
    FROM split_versions
)
WHERE rank_in_split = 1;
