-- 0027_bulk_s2_on_arxiv: an S2 paper's bulk record says whether it is on arXiv (has an arXiv ID),
-- as an OpenAlex work's says it has an arXiv location (issue 41). `inspire snapshot ingest`
-- keeps the S2 citations of the papers on arXiv alone (the targets' reference lists; --keep-all
-- keeps every one) and counts the others in `bulk_files.filtered_out`. Records ingested before
-- this migration get the value from their Paper's IDs.
UPDATE bulk_records SET on_arxiv = json_extract_string(paper, '$.ids.arxiv') IS NOT NULL
WHERE source = 's2';
COMMENT ON COLUMN bulk_records.on_arxiv IS 'An OpenAlex work: a location whose source is arXiv. An S2 paper: an arXiv ID (its citations are kept by a filtered ingest). NULL for arXiv''s own records.';
COMMENT ON COLUMN bulk_files.filtered_out IS 'Works, or S2 citations, read from the file and not kept by the ingest''s filter (0 with --keep-all, and for the kinds that are not filtered).';
