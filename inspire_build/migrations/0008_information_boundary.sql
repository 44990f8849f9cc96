-- 0008_information_boundary: the secret that keys instance IDs and cutoff offsets (private
-- side: never exported publicly, never in the card), and what the audit's attacks recovered.
CREATE TABLE instance_key (
    key_id      VARCHAR PRIMARY KEY,    -- 'default': one key per warehouse
    secret_hex  VARCHAR NOT NULL,       -- 64 hex digits; `inspire key export` prints it
    origin      VARCHAR NOT NULL,       -- generated | environment (INSPIRE_INSTANCE_KEY)
    created_at  TIMESTAMPTZ NOT NULL
);

-- One row per split version: the attacks `make audit` and `inspire export` run on its public side.
CREATE TABLE boundary_audits (
    version_id          VARCHAR PRIMARY KEY,
    jitter_days         INTEGER NOT NULL,  -- cutoff_jitter_days the version was built with
    instances           INTEGER NOT NULL,
    exact_cutoffs       INTEGER NOT NULL,  -- public cutoff = target first public date - 3 months
    hash_tried          BIGINT NOT NULL,   -- hashes computed: candidate IDs x public strings x formats
    hash_recovered      INTEGER NOT NULL,  -- instance IDs a hash of public data reproduced (must be 0)
    window_median       DOUBLE,            -- warehouse papers consistent with a public cutoff
    window_p10          DOUBLE,
    window_top1         DOUBLE,            -- share of instances whose target the brief ranks first
    window_top10        DOUBLE,            -- ... in the top 10
    audited_at          TIMESTAMPTZ NOT NULL
);

-- The cutoff jitter a version was built with: its published cutoffs lie 0..this many days early.
ALTER TABLE split_versions ADD COLUMN cutoff_jitter_days INTEGER;
