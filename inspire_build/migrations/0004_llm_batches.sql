-- 0004_llm_batches: OpenAI Batch API jobs, so a build can resume one instead of paying twice.
CREATE TABLE llm_batches (
    batch_id        VARCHAR PRIMARY KEY,
    status          VARCHAR NOT NULL,     -- the API's status: validating ... completed, failed, ...
    input_file_id   VARCHAR NOT NULL,
    output_file_id  VARCHAR,
    requests        INTEGER NOT NULL,
    call_keys       JSON NOT NULL,        -- the llm_calls keys the batch answers
    submitted_at    TIMESTAMPTZ NOT NULL,
    finished_at     TIMESTAMPTZ
);
