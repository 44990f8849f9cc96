-- 0022_audit_verdicts: the calibrated public-side audit (SPEC §9). Each attacker is recorded
-- beside its chance level, with each window's anonymity set (the papers in it the card's
-- public selection criteria would select), and every audit's verdict, which `inspire export`
-- reads: it publishes only a version whose latest audit passed, unless forced.
ALTER TABLE boundary_audits ADD COLUMN verdict VARCHAR;        -- passed | failed | too sparse to judge
ALTER TABLE boundary_audits ADD COLUMN reasons VARCHAR;        -- why, '; '-separated (NULL: passed)
ALTER TABLE boundary_audits ADD COLUMN anonymity_min INTEGER;  -- smallest anonymity set
ALTER TABLE boundary_audits ADD COLUMN anonymity_p10 DOUBLE;   -- its 10th percentile
ALTER TABLE boundary_audits ADD COLUMN anonymity_median DOUBLE;
ALTER TABLE boundary_audits ADD COLUMN attackers VARCHAR;      -- JSON list: name, n, top1, top10, chance1, chance10

-- One row per version: the verdict of its latest `inspire audit` (briefs and boundary).
CREATE TABLE audit_verdicts (
    version_id   VARCHAR PRIMARY KEY,
    split        VARCHAR NOT NULL,
    verdict      VARCHAR NOT NULL,   -- passed | failed | too sparse to judge
    reasons      VARCHAR,            -- why it did not pass, '; '-separated (NULL: passed)
    audited_at   TIMESTAMPTZ NOT NULL
);
