-- 0016_bulk: the bulk distributions (the OpenAlex snapshot's works, the S2 Datasets' papers,
-- abstracts, citations and paper-ids) as parsed records, each with the file and release it came
-- from, so that a build reads them before it asks the APIs. `gold_completeness` says, per target,
-- which side served its records and reference lists, and how many S2 citations named no paper. `bulk_files` holds one row per file
-- ingested whole: a file is ingested in one transaction with its row, so a file that fails
-- leaves nothing behind and a rerun skips the files already in.
CREATE TABLE bulk_files(
    path VARCHAR PRIMARY KEY,
    kind VARCHAR NOT NULL,
    release DATE,
    bytes BIGINT NOT NULL,
    modified_ns BIGINT NOT NULL,
    rows BIGINT NOT NULL,
    seconds DOUBLE NOT NULL,
    ingested_at TIMESTAMP WITH TIME ZONE NOT NULL
);
-- One record per source and ID (the OpenAlex work ID, the S2 corpus ID, the arXiv ID): the Paper
-- as the source's `parse` gives it, from the newest release that holds it. An OpenAlex work also
-- keeps what a split's candidate filter tests, as OpenAlex's own filter reads it: the primary
-- topic's field ID, an arXiv location, the publication date, `referenced_works_count`.
CREATE TABLE bulk_records(
    source VARCHAR,
    record_id VARCHAR,
    paper JSON NOT NULL,
    file VARCHAR NOT NULL,
    release DATE,
    primary_field INTEGER,
    on_arxiv BOOLEAN,
    published DATE,
    listed_references INTEGER,
    PRIMARY KEY(source, record_id)
);
-- Every typed ID a bulk record carries (`doi`, `arxiv`, `openalex`, `s2`, `corpusid`).
CREATE TABLE bulk_ids(
    scheme VARCHAR,
    "value" VARCHAR,
    source VARCHAR,
    record_id VARCHAR NOT NULL,
    PRIMARY KEY(scheme, "value", source)
);
CREATE TABLE bulk_abstracts(
    corpus_id BIGINT PRIMARY KEY,
    abstract VARCHAR,
    file VARCHAR NOT NULL,
    release DATE
);
CREATE TABLE bulk_citations(
    citing_corpus_id BIGINT NOT NULL,
    cited_corpus_id BIGINT,
    is_influential BOOLEAN,
    contexts VARCHAR[],
    intents VARCHAR[],
    file VARCHAR NOT NULL,
    release DATE
);
CREATE TABLE bulk_paper_ids(
    sha VARCHAR PRIMARY KEY,
    corpus_id BIGINT NOT NULL,
    is_primary BOOLEAN,
    file VARCHAR NOT NULL,
    release DATE
);
ALTER TABLE gold_completeness ADD COLUMN served_by JSON;
ALTER TABLE gold_completeness ADD COLUMN unidentified INTEGER;
