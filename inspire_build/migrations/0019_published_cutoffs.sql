-- 0019_published_cutoffs: one published cutoff per target (SPEC §9). The first split version,
-- of any split, that holds a target stores its cutoff here; every later build keeps that
-- offset whatever INSPIRE_CUTOFF_JITTER_DAYS says, so no two versions can be intersected (a
-- build at jitter 30 and one at jitter 0 would show the exact cutoff). Private side, like
-- instance_key: the offset is the secret the jitter hides.
CREATE TABLE published_cutoffs (
    target_id     VARCHAR PRIMARY KEY,     -- the target (evaluator-only)
    offset_days   INTEGER NOT NULL CHECK (offset_days >= 0),  -- days before the exact cutoff
    jitter_days   INTEGER NOT NULL,        -- the jitter it lies within: offset_days <= this
    cutoff_date   DATE NOT NULL,           -- the cutoff as first published
    version_id    VARCHAR NOT NULL,        -- the version that published it first
    published_at  TIMESTAMPTZ NOT NULL     -- when that version was written
);

-- What a version says about its cutoffs. cutoff_jitter_days (0008) stays the bound its
-- published cutoffs lie within: the setting, widened to the jitter of every cutoff it kept.
-- The INSPIRE_CUTOFF_JITTER_DAYS the build ran with; null for a version written before 0019.
ALTER TABLE split_versions ADD COLUMN cutoff_jitter_setting INTEGER;
-- Instances whose cutoff an earlier version published, kept; null before 0019.
ALTER TABLE split_versions ADD COLUMN cutoffs_kept INTEGER;

-- The cutoffs the versions already written published: per target, the earliest version's, its
-- offset from the exact cutoff of the target's first public date (never below 0: a cutoff is
-- never moved later than the exact one), within that version's jitter (0 before 0008).
INSERT INTO published_cutoffs
SELECT target_id, offset_days, greatest(jitter_days, offset_days), cutoff_date, version_id,
       created_at
FROM (
    SELECT i.target_id, i.cutoff_date, v.version_id, v.created_at,
           coalesce(v.cutoff_jitter_days, 0) AS jitter_days,
           greatest(0, date_diff('day', i.cutoff_date,
                                 CAST(t.first_public_date - INTERVAL 3 MONTH AS DATE)))
               AS offset_days,
           row_number() OVER (PARTITION BY i.target_id ORDER BY v.created_at, v.version_id)
               AS n
    FROM instances i
    JOIN split_versions v USING (version_id)
    JOIN targets t ON t.split = v.split AND t.paper_id = i.target_id
    WHERE t.first_public_date IS NOT NULL AND i.cutoff_date IS NOT NULL
)
WHERE n = 1;
