-- 0017_reviews: curators' decisions on the instances of split versions (`inspire review serve`).
-- One row per action, never rewritten: a later action on the same thing stands beside the
-- earlier one, and the latest stands. A decision is about the target (and, for a grade, the
-- reference), so it holds in every version of the split; `version_id` and `instance_id` say
-- where the curator made it. `inspire build --apply-reviews` writes a new version from a
-- version's records with the standing decisions applied, and records them in
-- `split_versions.reviews`.
CREATE TABLE reviews (
    review_id    INTEGER PRIMARY KEY,       -- 1, 2, ... in the order the actions were taken
    split        VARCHAR NOT NULL,
    version_id   VARCHAR NOT NULL,          -- the version the curator was reading
    instance_id  VARCHAR NOT NULL,          -- its instance
    target_id    VARCHAR NOT NULL,          -- what the decision is about (evaluator-only)
    paper_id     VARCHAR,                   -- the graded reference, for a grade change only
    action       VARCHAR NOT NULL CHECK (action IN ('accept', 'reject', 'grade', 'leak', 'brief')),
    curator      VARCHAR NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    "before"     JSON,                      -- what the curator saw
    "after"      JSON NOT NULL,             -- what the curator decided
    CHECK ((action = 'grade') = (paper_id IS NOT NULL))
);

-- For a version written by `--apply-reviews`: the version it was made from (`base_version`),
-- the IDs of the reviews applied (`review_ids`) and the figures its card reports (`figures`).
-- Null for a version built from the pipeline.
ALTER TABLE split_versions ADD COLUMN reviews JSON;
