-- 0002_raw_http_resources: replay matches a request to a recorded response by *resource*, not by
-- exact URL. A resource is the endpoint, entity IDs, filters and page, without presentation
-- parameters (fields/select, per_page/limit, mailto, keys). See README "Raw response store".
ALTER TABLE raw_http ADD COLUMN resource_key VARCHAR;   -- source + canonical resource
ALTER TABLE raw_http ADD COLUMN fields VARCHAR[];       -- requested fields; null = the full record
ALTER TABLE raw_http ADD COLUMN page_size INTEGER;      -- requested per_page/limit/max_results
ALTER TABLE raw_http ADD COLUMN complete BOOLEAN;       -- the page holds the whole result set
CREATE INDEX raw_http_resource ON raw_http (resource_key);
