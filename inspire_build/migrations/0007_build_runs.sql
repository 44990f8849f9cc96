-- 0007_build_runs: one row per build, so serialised, failed and killed builds all leave a record.
CREATE TABLE build_runs (
    run_id          VARCHAR PRIMARY KEY,  -- the Prefect flow run's ID
    split           VARCHAR NOT NULL,
    status          VARCHAR NOT NULL,     -- running | completed | failed | interrupted
    reason          VARCHAR,
    version_id      VARCHAR,              -- the split version it wrote, once completed
    requested_at    TIMESTAMPTZ NOT NULL, -- when it asked for the warehouse
    started_at      TIMESTAMPTZ NOT NULL, -- when it got the write lock
    waited_s        DOUBLE NOT NULL,      -- seconds it waited for another process's lock
    finished_at     TIMESTAMPTZ,
    pid             INTEGER NOT NULL
);
