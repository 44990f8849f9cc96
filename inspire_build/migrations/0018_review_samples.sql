-- 0018_review_samples: the instances of a split version drawn for curators to review
-- (`inspire review sample`), from which the card and `inspire audit` estimate model-curator
-- agreement. One sample per version: drawing again replaces the version's rows. The draw is
-- seeded and stratified by the target's first public month and the instance's highest gold
-- tier, so `month` and `tier` are evaluator-only, as the instance's target is.
CREATE TABLE review_samples (
    version_id   VARCHAR NOT NULL,          -- the version sampled
    instance_id  VARCHAR NOT NULL,          -- one of its instances, drawn
    split        VARCHAR NOT NULL,
    "position"   INTEGER NOT NULL,          -- 1, 2, ... in the seeded order of the draw
    "month"      VARCHAR NOT NULL,          -- its target's first public month (YYYY-MM, or undated)
    tier         INTEGER NOT NULL,          -- its highest gold tier (0: it has no qrel)
    seed         INTEGER NOT NULL,          -- the draw's seed
    requested    INTEGER NOT NULL,          -- the N asked for (more than the version holds: all)
    drawn_at     TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (version_id, instance_id)
);
