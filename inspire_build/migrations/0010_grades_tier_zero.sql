-- 0010_grades_tier_zero: the grader decides which eligible references are antecedents. A
-- reference graded tier 0 (cited, but not an antecedent) keeps its row and rationale in
-- `grades`, with no role; only tiers 1-3 become qrels (whose CHECK stays 1-3).
-- DuckDB cannot alter a CHECK or drop a NOT NULL, so `grades` is rebuilt with its rows.

CREATE TABLE grades_0010 (
    target_id    VARCHAR NOT NULL,
    paper_id     VARCHAR NOT NULL,
    tier         INTEGER NOT NULL CHECK (tier BETWEEN 0 AND 3),  -- 0: not an antecedent
    role         VARCHAR,                   -- null exactly at tier 0
    rationale    VARCHAR NOT NULL CHECK (rationale <> ''),       -- every tier keeps its reason
    backend      VARCHAR NOT NULL,
    model        VARCHAR NOT NULL,
    prompt_hash  VARCHAR NOT NULL,
    PRIMARY KEY (target_id, paper_id),
    CHECK ((tier = 0) = (role IS NULL))
);

INSERT INTO grades_0010 (
    target_id, paper_id, tier, role, rationale, backend, model, prompt_hash
)
SELECT target_id, paper_id, tier, role, rationale, backend, model, prompt_hash
FROM grades;

DROP TABLE grades;

ALTER TABLE grades_0010 RENAME TO grades;

-- Eligible references the grader graded tier 0; null until the target is graded.
ALTER TABLE gold_completeness ADD COLUMN not_antecedents INTEGER;
