-- 0026_bulk_filtered: the works an ingest of the OpenAlex snapshot read and did not keep (issue
-- 41). `inspire snapshot ingest` keeps only the works a build can ask for (on arXiv, or of a
-- split's field; --keep-all keeps every one), so each file's row says how many it left out.
ALTER TABLE bulk_files ADD COLUMN filtered_out BIGINT DEFAULT 0;
COMMENT ON COLUMN bulk_files.filtered_out IS 'Works read from the file and not kept by the ingest''s filter (0 with --keep-all, and for the kinds that are not filtered).';
COMMENT ON COLUMN bulk_files.rows IS 'Records ingested from it (kept by the filter, for OpenAlex works).';
