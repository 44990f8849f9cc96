-- 0003_gold_completeness: what the lineage step saw, kept and lost for each target.
-- The status counts add up to references_seen.
CREATE TABLE gold_completeness (
    target_id           VARCHAR PRIMARY KEY,
    references_seen     INTEGER NOT NULL,   -- merged reference entries across sources
    resolved            INTEGER NOT NULL,   -- entries with a usable identifier
    dated               INTEGER NOT NULL,   -- resolved entries with a first public date
    eligible            INTEGER NOT NULL,   -- strictly before the cutoff: the gold candidates
    after_cutoff        INTEGER NOT NULL,
    dated_after_target  INTEGER NOT NULL,
    no_date             INTEGER NOT NULL,
    unresolved          INTEGER NOT NULL,
    self                INTEGER NOT NULL,
    sources             VARCHAR[] NOT NULL, -- the sources whose lists were merged
    updated_at          TIMESTAMPTZ NOT NULL
);
