-- 0012_version_records: a version keeps its own copy of every grade of its targets (tier 0
-- included, each with its rationale) and of its briefs' audit findings. A later build that
-- regrades a target or re-audits its brief rewrites `grades` and `audit_findings`, never what a
-- written version says. Versions written before this migration have no copy.
CREATE TABLE version_grades (
    version_id  VARCHAR NOT NULL,
    target_id   VARCHAR NOT NULL,
    paper_id    VARCHAR NOT NULL,
    tier        INTEGER NOT NULL CHECK (tier BETWEEN 0 AND 3),
    role        VARCHAR,                    -- null exactly at tier 0
    rationale   VARCHAR NOT NULL,
    PRIMARY KEY (version_id, target_id, paper_id)
);

CREATE TABLE version_findings (
    version_id   VARCHAR NOT NULL,
    instance_id  VARCHAR NOT NULL,
    "check"      VARCHAR NOT NULL,          -- lexical | identity | retrieval | mechanism
    passed       BOOLEAN NOT NULL,
    "level"      VARCHAR NOT NULL,
    detail       VARCHAR NOT NULL,
    PRIMARY KEY (version_id, instance_id, "check")
);
