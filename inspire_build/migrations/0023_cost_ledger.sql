-- 0023_cost_ledger: what each LLM call cost, and which builds, versions and targets it served.
--
-- A model with no price in INSPIRE_LLM_PRICES has an unknown cost: llm_calls.cost_usd is NULL,
-- never 0, so sum(cost_usd) is what the priced calls cost and `count(*) FILTER (WHERE cost_usd
-- IS NULL)` counts the rest. Rows logged before this migration cost 0 when their model had no
-- price: an endpoint's call (not the free rules backend) that used tokens and cost 0 is NULL now.
ALTER TABLE llm_calls ALTER COLUMN cost_usd DROP NOT NULL;
ALTER TABLE llm_calls ALTER COLUMN cost_usd DROP DEFAULT;
UPDATE llm_calls SET cost_usd = NULL
WHERE backend <> 'rules' AND cost_usd = 0 AND tokens_in + tokens_out > 0;

-- One row per call a build's target used, written with the target's records: asked of the
-- model then, or answered from the call log (a rerun, a twin target's call: `cached`).
CREATE TABLE llm_call_uses (
    call_key   VARCHAR NOT NULL,      -- llm_calls.call_key
    run_id     VARCHAR NOT NULL,      -- build_runs.run_id: the build that stored the target
    split      VARCHAR NOT NULL,
    target_id  VARCHAR NOT NULL,
    step       VARCHAR NOT NULL,      -- what the call was for: its prompt, or grade_deciding
    cached     BOOLEAN NOT NULL,      -- answered from the log or a twin's call, not asked
    used_at    TIMESTAMPTZ NOT NULL,  -- when the target's records were stored
    PRIMARY KEY (call_key, run_id, target_id, step)
);

-- Each use with its call, its build and the version the build wrote (NULL: the build failed, or
-- has not finished). `cost_usd` is the call's own cost on every use (NULL: unpriced). `paid_usd`
-- counts it once: the call's cost on its first use in the ledger, 0 on every later one, a cache
-- hit's included; so sum(paid_usd) over any uses adds each call once, and over a build is what
-- it paid for calls that no earlier build's stored target used.
CREATE VIEW llm_ledger AS
SELECT
    u.run_id,
    u.split,
    r.version_id,
    v.label AS version_label,
    r.status AS run_status,
    u.target_id,
    u.step,
    u.call_key,
    u.cached,
    c.backend,
    c.model,
    c.status AS call_status,
    c.tokens_in,
    c.tokens_out,
    c.cost_usd,
    CASE
        WHEN row_number() OVER (
            PARTITION BY u.call_key ORDER BY u.used_at, u.run_id, u.target_id, u.step
        ) = 1 THEN c.cost_usd
        ELSE 0
    END AS paid_usd,
    c.cost_usd IS NOT NULL AS priced,
    u.used_at
FROM llm_call_uses u
JOIN llm_calls c USING (call_key)
JOIN build_runs r USING (run_id)
LEFT JOIN split_versions v ON v.version_id = r.version_id;
