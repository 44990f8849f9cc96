-- 0014_llm_call_status: a call the model refused, or answered invalidly even after the repair,
-- is logged too, with the tokens it used (they are paid for), under status 'refused' or
-- 'invalid' and its error as the output. Only 'answered' rows are served as the cache, so a
-- failed call is asked again on a rerun; its answer then replaces the failure's row.
ALTER TABLE llm_calls ADD COLUMN status VARCHAR DEFAULT 'answered';
UPDATE llm_calls SET status = 'answered';
