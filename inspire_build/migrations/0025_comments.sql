-- 0025_comments: SQL a user can read (issue 38). A comment on every table, view and column, read
-- with `SELECT table_name, column_name, comment FROM duckdb_columns()` (and `duckdb_tables()`,
-- `duckdb_views()`), and rendered into docs/reference.md by `make docs`. Plus `instance_targets`,
-- the view that joins each instance to its target and split under one name, `target_id`
-- (`targets` calls the same ID `paper_id`; no column is renamed).
--
-- Conventions. A table or view whose comment starts "Private" holds targets' identities, gold,
-- or the secrets the information boundary rests on: never publish it. Dates are DATE (a UTC
-- calendar day); times are TIMESTAMPTZ. A paper ID is the warehouse's canonical key of a work,
-- `scheme:value` (openalex:W123, arxiv:2310.00826, doi:10.1/x, s2:..., corpusid:...), the key of
-- `papers`. A later migration that adds a column comments it; one that rebuilds a table or
-- replaces a view (which drops its comments) comments it again; a test checks every column.
--
-- DuckDB keeps a view's column list as it was when the view was created: `latest_split_versions`
-- (SELECT * over split_versions, created in 0011) listed 12 of split_versions' 15 columns, so it
-- is created again here, unchanged, before its columns are commented.

CREATE OR REPLACE VIEW latest_split_versions AS
SELECT * EXCLUDE (rank_in_split)
FROM (
    SELECT *, row_number() OVER (
                  PARTITION BY split ORDER BY written_at DESC, created_at DESC, version_id DESC
              ) AS rank_in_split
    FROM split_versions
)
WHERE rank_in_split = 1;

-- Each instance of each split version with its target, by one name: "which targets does version V
-- hold, with their split" is `SELECT split, target_id, title FROM instance_targets WHERE
-- version_id = 'V'`. The target's columns are its row in `targets` for the version's split, as
-- the latest build left it (NULL where none is left).
CREATE VIEW instance_targets AS
SELECT
    i.version_id,
    v.split,
    v.label AS version_label,
    i.instance_id,
    i.target_id,
    t.title,
    t.first_public_date,
    i.cutoff_date,
    i.n_antecedents,
    i.brief_id,
    t.status AS target_status,
    t.outcome AS target_outcome
FROM instances i
JOIN split_versions v USING (version_id)
LEFT JOIN targets t ON t.split = v.split AND t.paper_id = i.target_id;

-- _migrations ------------------------------------------------------------------------------------
COMMENT ON TABLE _migrations IS 'Each schema migration applied to this warehouse (inspire_build/migrations/), one row each, written in the migration''s own transaction. An applied migration is never edited: its checksum is checked on every open.';
COMMENT ON COLUMN _migrations.name IS 'The migration''s file name without .sql, e.g. 0025_comments; the 4-digit prefix orders them.';
COMMENT ON COLUMN _migrations.checksum IS 'sha256 (hex) of the migration''s SQL text as applied; opening a warehouse fails if the file has changed since.';
COMMENT ON COLUMN _migrations.applied_at IS 'When the migration was applied.';

-- 1. Raw responses -------------------------------------------------------------------------------
COMMENT ON TABLE raw_http IS 'Private (its requests name targets and their references): every raw HTTP response from OpenAlex, Semantic Scholar and arXiv, one row per distinct request with secrets removed. Replay (INSPIRE_SOURCE_MODE replay/auto) answers from it by resource_key.';
COMMENT ON COLUMN raw_http.request_key IS 'sha256 (hex) of source, method, redacted URL and redacted body: the exact request.';
COMMENT ON COLUMN raw_http.source IS 'Which API answered: openalex | s2 | arxiv.';
COMMENT ON COLUMN raw_http.method IS 'HTTP method: GET or POST.';
COMMENT ON COLUMN raw_http.url IS 'The request URL, redacted: no api_key, mailto or token.';
COMMENT ON COLUMN raw_http.request_body IS 'The request body (a POST''s JSON), redacted; NULL for a GET.';
COMMENT ON COLUMN raw_http.status IS 'HTTP status code of the response (200, 404, 429, ...).';
COMMENT ON COLUMN raw_http.headers IS 'The response headers, as a JSON object.';
COMMENT ON COLUMN raw_http.body IS 'The response body, byte for byte as received.';
COMMENT ON COLUMN raw_http.body_sha256 IS 'sha256 (hex) of body.';
COMMENT ON COLUMN raw_http.origin IS 'Where the response came from: live (the real API) | sandbox (the local emulator) | import:<file> (a recorded cassette or snapshot file).';
COMMENT ON COLUMN raw_http.fetched_at IS 'When the response was received (or imported).';
COMMENT ON COLUMN raw_http.resource_key IS 'The source plus the canonical resource (endpoint, entity IDs, filters, page), without presentation parameters (fields, page size, mailto, keys): what replay matches a request by.';
COMMENT ON COLUMN raw_http.fields IS 'The fields the request asked for; NULL: the full record.';
COMMENT ON COLUMN raw_http.page_size IS 'The requested page size (per_page, limit or max_results); NULL: none given.';
COMMENT ON COLUMN raw_http.complete IS 'True when this page holds the whole result set, so a request with a smaller page can be answered from it.';

COMMENT ON TABLE llm_calls IS 'Private (its outputs are briefs, audit guesses and grades of targets): every LLM call, one row per distinct call, doubling as a cache. Only status = answered rows are served, so a refused or invalid call is asked again on a rerun, its answer then replacing the row.';
COMMENT ON COLUMN llm_calls.call_key IS 'sha256 (hex) of backend, model, prompt_hash and input_hash: the cache key. Joins llm_call_uses.call_key.';
COMMENT ON COLUMN llm_calls.backend IS 'openai (any OpenAI-compatible endpoint) | rules (the built-in deterministic backend, free).';
COMMENT ON COLUMN llm_calls.model IS 'The model name sent to the endpoint (rules-v1 for the rules backend).';
COMMENT ON COLUMN llm_calls.prompt_name IS 'The prompt template, a file of prompts/ without .md: brief | audit_identity | audit_mechanism_guess | audit_mechanism | grade.';
COMMENT ON COLUMN llm_calls.prompt_hash IS 'sha256 (hex) of the prompt template''s text.';
COMMENT ON COLUMN llm_calls.input_hash IS 'sha256 (hex) of the call''s filled-in input (and the sampling settings and output schema sent).';
COMMENT ON COLUMN llm_calls.output IS 'The parsed answer as JSON; for a refused or invalid call, its error.';
COMMENT ON COLUMN llm_calls.tokens_in IS 'Prompt tokens the provider counted (0 for the rules backend).';
COMMENT ON COLUMN llm_calls.tokens_out IS 'Completion tokens the provider counted (0 for the rules backend).';
COMMENT ON COLUMN llm_calls.latency_ms IS 'Wall time of the call, in milliseconds.';
COMMENT ON COLUMN llm_calls.cost_usd IS 'What the call cost, in USD, from INSPIRE_LLM_PRICES (a Batch API answer at INSPIRE_LLM_BATCH_PRICE_FACTOR of it); NULL: the model has no price (unknown, never 0). sum(cost_usd) is what the priced calls cost.';
COMMENT ON COLUMN llm_calls.created_at IS 'When the call was answered.';
COMMENT ON COLUMN llm_calls.status IS 'answered | refused (the model refused) | invalid (its answer failed validation even after the repair retry). Only answered rows are served as the cache.';

COMMENT ON TABLE llm_batches IS 'Each OpenAI Batch API job a build submitted, so a build killed while waiting resumes the job instead of paying twice. Names no target itself (call_keys point into llm_calls).';
COMMENT ON COLUMN llm_batches.batch_id IS 'The Batch API''s job ID.';
COMMENT ON COLUMN llm_batches.status IS 'The API''s status of the job as last seen: validating | in_progress | finalizing | completed | failed | expired | cancelling | cancelled.';
COMMENT ON COLUMN llm_batches.input_file_id IS 'The uploaded JSONL file of requests (the API''s file ID).';
COMMENT ON COLUMN llm_batches.output_file_id IS 'The API''s file of answers; NULL until the job has one.';
COMMENT ON COLUMN llm_batches.requests IS 'How many requests the job holds.';
COMMENT ON COLUMN llm_batches.call_keys IS 'JSON list of the llm_calls.call_key values the job answers, in request order.';
COMMENT ON COLUMN llm_batches.submitted_at IS 'When the job was submitted.';
COMMENT ON COLUMN llm_batches.finished_at IS 'When the job was seen finished; NULL while it runs.';

COMMENT ON TABLE llm_call_uses IS 'Private (names targets): each LLM call a build''s target used, written with the target''s records; the cost ledger''s facts (see the llm_ledger view). Other runs of the LLM steps (inspire audit brief, the review server) record none.';
COMMENT ON COLUMN llm_call_uses.call_key IS 'The call. Joins llm_calls.call_key.';
COMMENT ON COLUMN llm_call_uses.run_id IS 'The build that stored the target. Joins build_runs.run_id.';
COMMENT ON COLUMN llm_call_uses.split IS 'The split the build built (train, eval, or a configured one).';
COMMENT ON COLUMN llm_call_uses.target_id IS 'The target the call served (a paper ID; targets.paper_id).';
COMMENT ON COLUMN llm_call_uses.step IS 'What the call was for: its prompt name (brief, audit_identity, audit_mechanism_guess, audit_mechanism, grade), or grade_deciding for the reading that breaks a split grade.';
COMMENT ON COLUMN llm_call_uses.cached IS 'True when the call was answered from the call log (a rerun, or a twin target''s identical call), not asked of the model.';
COMMENT ON COLUMN llm_call_uses.used_at IS 'When the target''s records were stored.';

COMMENT ON VIEW llm_ledger IS 'Private (names targets): each use in llm_call_uses with its call, its build and the version the build wrote. paid_usd counts each call once over the whole ledger, so sum(paid_usd) over any rows adds each call once: SELECT version_id, step, sum(paid_usd) FROM llm_ledger GROUP BY ALL.';
COMMENT ON COLUMN llm_ledger.run_id IS 'The build (build_runs.run_id).';
COMMENT ON COLUMN llm_ledger.split IS 'The split the build built.';
COMMENT ON COLUMN llm_ledger.version_id IS 'The split version the build wrote (split_versions.version_id); NULL: the build failed or has not finished.';
COMMENT ON COLUMN llm_ledger.version_label IS 'That version''s label (split_versions.label); NULL when it has none.';
COMMENT ON COLUMN llm_ledger.run_status IS 'The build''s status (build_runs.status): running | completed | failed | cancelled | interrupted.';
COMMENT ON COLUMN llm_ledger.target_id IS 'The target the call served (targets.paper_id).';
COMMENT ON COLUMN llm_ledger.step IS 'What the call was for: its prompt name, or grade_deciding.';
COMMENT ON COLUMN llm_ledger.call_key IS 'The call (llm_calls.call_key).';
COMMENT ON COLUMN llm_ledger.cached IS 'True when this use was answered from the call log or a twin''s call, not asked.';
COMMENT ON COLUMN llm_ledger.backend IS 'The call''s backend: openai | rules.';
COMMENT ON COLUMN llm_ledger.model IS 'The call''s model.';
COMMENT ON COLUMN llm_ledger.call_status IS 'The call''s status (llm_calls.status): answered | refused | invalid.';
COMMENT ON COLUMN llm_ledger.tokens_in IS 'The call''s prompt tokens.';
COMMENT ON COLUMN llm_ledger.tokens_out IS 'The call''s completion tokens.';
COMMENT ON COLUMN llm_ledger.cost_usd IS 'The call''s own cost in USD, repeated on every use; NULL: unpriced model.';
COMMENT ON COLUMN llm_ledger.paid_usd IS 'The call''s cost (USD) on its first use in the ledger (by used_at, run_id, target_id, step), 0 on every later use: sum it to count each call once. NULL on a first use of an unpriced call.';
COMMENT ON COLUMN llm_ledger.priced IS 'True when the call''s model has a price (cost_usd is not NULL).';
COMMENT ON COLUMN llm_ledger.used_at IS 'When the target''s records were stored.';

-- 2. Parsed entities -----------------------------------------------------------------------------
COMMENT ON TABLE papers IS 'One row per work (a paper) the sources described: targets, their references and candidates alike, with each source''s date and the first public date that won. Public metadata; which papers are targets is private (see targets). A later record of the same work may rewrite its row.';
COMMENT ON COLUMN papers.paper_id IS 'The work''s canonical paper ID, scheme:value (openalex:W123, arxiv:2310.00826, ...). The key other tables'' paper_id and target_id columns join.';
COMMENT ON COLUMN papers.title IS 'The title.';
COMMENT ON COLUMN papers.abstract IS 'The abstract; NULL when no source gave one.';
COMMENT ON COLUMN papers.year IS 'Publication year as the source gave it.';
COMMENT ON COLUMN papers.venue IS 'Journal, conference or repository name; NULL when unknown.';
COMMENT ON COLUMN papers.authors IS 'Author display names, in byline order.';
COMMENT ON COLUMN papers.fields IS 'Fields of study (OpenAlex fields, S2 fields of study, or arXiv categories).';
COMMENT ON COLUMN papers.reference_count IS 'How many references the source says the work lists.';
COMMENT ON COLUMN papers.arxiv_v1_date IS 'The date arXiv''s first version (v1) appeared; NULL: not on arXiv or undated.';
COMMENT ON COLUMN papers.openalex_date IS 'OpenAlex''s publication_date.';
COMMENT ON COLUMN papers.s2_date IS 'Semantic Scholar''s publication date.';
COMMENT ON COLUMN papers.date_precision IS 'How much of the winning date the source gave: day | month | year.';
COMMENT ON COLUMN papers.first_public_date IS 'The earliest credible date the work was public, over the sources (cutoff.first_public); NULL: no source dates it.';
COMMENT ON COLUMN papers.first_public_source IS 'Which source''s date won: arxiv | openalex | s2.';
COMMENT ON COLUMN papers.sources IS 'The sources that described the work: openalex, s2, arxiv.';
COMMENT ON COLUMN papers.updated_at IS 'When the row was last written.';

COMMENT ON TABLE paper_ids IS 'The ID crosswalk: every known identifier of a work, each mapping to one paper_id. Look a DOI, arXiv ID or S2 ID up here to find the warehouse''s key.';
COMMENT ON COLUMN paper_ids.scheme IS 'The identifier''s kind: arxiv | doi | openalex | s2 | corpusid.';
COMMENT ON COLUMN paper_ids.value IS 'The identifier in canonical form (inspire_build/ids.py): a lower-case DOI without https://doi.org/, an arXiv ID without version, W123 for OpenAlex, ...';
COMMENT ON COLUMN paper_ids.paper_id IS 'The work it identifies. Joins papers.paper_id.';
COMMENT ON COLUMN paper_ids.source IS 'Which source reported the identifier: openalex | s2 | arxiv.';

COMMENT ON TABLE "references" IS 'Private (gold candidates of targets): each target''s bibliography merged across sources, one row per entry, with how it was matched and its status against the target''s cutoff. Write the name in double quotes: references is an SQL keyword.';
COMMENT ON COLUMN "references".target_id IS 'The citing target (targets.paper_id).';
COMMENT ON COLUMN "references".ref_key IS 'The entry''s position in the merged list, zero-padded (0000, 0001, ...): stable within its target.';
COMMENT ON COLUMN "references".paper_id IS 'The cited work (papers.paper_id); NULL while unresolved.';
COMMENT ON COLUMN "references".title IS 'The title the sources gave for the entry.';
COMMENT ON COLUMN "references".year IS 'The year the sources gave for the entry.';
COMMENT ON COLUMN "references".ids IS 'Every ID the sources gave for the entry, as JSON: scheme (arxiv, doi, openalex, s2, corpusid) -> list of canonical values.';
COMMENT ON COLUMN "references".sources IS 'Which sources listed the entry: openalex, s2, arxiv.';
COMMENT ON COLUMN "references".match_rule IS 'The strongest rule that matched one source''s entry to another''s: doi | arxiv | openalex | s2 | title_year; NULL: nothing was matched (one source listed it).';
COMMENT ON COLUMN "references".match_score IS 'The best score of that rule''s matches, 0-100 (a title_year match''s title similarity); NULL where the rule gives none.';
COMMENT ON COLUMN "references".contexts IS 'Citation contexts: the sentences of the target that cite it (S2); NULL: no source gives contexts.';
COMMENT ON COLUMN "references".intents IS 'S2''s citation intents (background, methodology, result); NULL: not given.';
COMMENT ON COLUMN "references".is_influential IS 'S2''s influential-citation flag; NULL: not given.';
COMMENT ON COLUMN "references".status IS 'Exactly one of: eligible (strictly before the cutoff: a gold candidate) | after_cutoff | dated_after_target | no_date | unresolved (no usable ID) | self (the target itself).';
COMMENT ON COLUMN "references".reason IS 'Why it has its status, for humans (never parsed).';
COMMENT ON COLUMN "references".work_title IS 'The cited work''s title as this target''s lineage resolved it: what its brief, audit and grading read.';
COMMENT ON COLUMN "references".work_abstract IS 'The cited work''s abstract as this target''s lineage resolved it.';

-- 3. Pipeline state ------------------------------------------------------------------------------
COMMENT ON TABLE targets IS 'Private (targets'' identities): every candidate target of every split, one row per split and paper, with its current status and why, as the latest build left it. The target''s ID is paper_id here and target_id everywhere else; the instance_targets view joins instances to it.';
COMMENT ON COLUMN targets.split IS 'The split: train | eval, or another configured in INSPIRE_SPLITS.';
COMMENT ON COLUMN targets.paper_id IS 'The target''s paper ID (papers.paper_id); every other table and view calls it target_id.';
COMMENT ON COLUMN targets.title IS 'The title, as the target''s lineage resolved it (what its LLM steps read).';
COMMENT ON COLUMN targets.first_public_date IS 'The target''s first public date, over the sources; NULL: undated (outcome no_date).';
COMMENT ON COLUMN targets.cutoff_date IS 'The target''s published cutoff: its first public date minus 3 months, moved earlier by its secret offset (published_cutoffs). A reference is eligible strictly before it.';
COMMENT ON COLUMN targets.status IS 'candidate (still in the pipeline) | accepted (has an instance) | excluded (see outcome).';
COMMENT ON COLUMN targets.reason IS 'Why it has its status, for humans (never parsed; query outcome instead).';
COMMENT ON COLUMN targets.updated_at IS 'When the row was last written.';
COMMENT ON COLUMN targets.outcome IS 'The reason''s kind: selected | over_limit | no_date | outside_window | no_references | no_eligible_reference | thin_window | lineage_resolved | llm_failed | every_brief_leaked | grading_failed | no_graded_antecedent | accepted. GROUP BY outcome for the funnel.';
COMMENT ON COLUMN targets.source_problems IS 'What the sources could not say about the target (a field given with the wrong type, a failed request); NULL: nothing.';
COMMENT ON COLUMN targets.abstract IS 'The abstract, as the target''s lineage resolved it (what its LLM steps read).';

COMMENT ON TABLE gold_completeness IS 'Private (names targets): per target, what lineage saw, kept and lost of its bibliography. The status counts (eligible, after_cutoff, dated_after_target, no_date, unresolved, self) add up to references_seen.';
COMMENT ON COLUMN gold_completeness.target_id IS 'The target (targets.paper_id).';
COMMENT ON COLUMN gold_completeness.references_seen IS 'Merged reference entries across sources (rows in references).';
COMMENT ON COLUMN gold_completeness.resolved IS 'Entries with a usable identifier.';
COMMENT ON COLUMN gold_completeness.dated IS 'Resolved entries with a first public date.';
COMMENT ON COLUMN gold_completeness.eligible IS 'Entries strictly before the cutoff: the gold candidates the grader grades.';
COMMENT ON COLUMN gold_completeness.after_cutoff IS 'Entries first public on or after the cutoff.';
COMMENT ON COLUMN gold_completeness.dated_after_target IS 'Entries dated after the target itself (a later version, or a bad date).';
COMMENT ON COLUMN gold_completeness.no_date IS 'Resolved entries no source dates.';
COMMENT ON COLUMN gold_completeness.unresolved IS 'Entries with no usable identifier.';
COMMENT ON COLUMN gold_completeness.self IS 'Entries that are the target itself.';
COMMENT ON COLUMN gold_completeness.sources IS 'The sources whose reference lists were merged: openalex, s2.';
COMMENT ON COLUMN gold_completeness.updated_at IS 'When the row was last written.';
COMMENT ON COLUMN gold_completeness.not_antecedents IS 'Eligible entries the grader graded tier 0 (cited, not an antecedent); NULL until the target is graded.';
COMMENT ON COLUMN gold_completeness.served_by IS 'Which side served the target''s records, as JSON: {"openalex": "api" | "bulk <release>", "s2 references": "api" | "bulk <release>"}.';
COMMENT ON COLUMN gold_completeness.unidentified IS 'S2 Datasets citations of the target that name no paper, left out of its references (0 when the API served them); NULL for rows written before migration 0016.';

COMMENT ON TABLE briefs IS 'Private (names targets): every research brief generated from a target, one row per attempt; at most one per target is accepted. An accepted brief''s text is public once a version holds it (instances.brief).';
COMMENT ON COLUMN briefs.brief_id IS 'sha256 (hex, 20 digits) of target, attempt and text. Joins audit_findings.brief_id and instances.brief_id.';
COMMENT ON COLUMN briefs.target_id IS 'The target it describes (targets.paper_id).';
COMMENT ON COLUMN briefs.attempt IS '1, 2, ... up to INSPIRE_BRIEF_ATTEMPTS: a rejected brief is written again.';
COMMENT ON COLUMN briefs.text IS 'The brief: the target''s problem without its solution, title or identity.';
COMMENT ON COLUMN briefs.word_count IS 'Words in text (split on whitespace).';
COMMENT ON COLUMN briefs.prompt_name IS 'The prompt that wrote it (brief).';
COMMENT ON COLUMN briefs.prompt_hash IS 'sha256 (hex) of that prompt''s template.';
COMMENT ON COLUMN briefs.backend IS 'openai | rules.';
COMMENT ON COLUMN briefs.model IS 'The model that wrote it.';
COMMENT ON COLUMN briefs.status IS 'accepted | rejected (it failed a leakage check, or the LLM failed).';
COMMENT ON COLUMN briefs.reason IS 'Why it was rejected, for humans; NULL when accepted.';
COMMENT ON COLUMN briefs.created_at IS 'When it was written.';

COMMENT ON TABLE audit_findings IS 'Private (judged against targets; details may quote them): the latest result of each leakage check on each brief. A version keeps its own copy in version_findings.';
COMMENT ON COLUMN audit_findings.brief_id IS 'The brief. Joins briefs.brief_id.';
COMMENT ON COLUMN audit_findings."check" IS 'The check: lexical | identity | retrieval | mechanism | search. Quote it: check is an SQL keyword.';
COMMENT ON COLUMN audit_findings.passed IS 'True when the brief passed the check (does not leak by it).';
COMMENT ON COLUMN audit_findings.level IS 'How much leaked: none | partial | full.';
COMMENT ON COLUMN audit_findings.detail IS 'What the check saw, for humans (never parsed).';

COMMENT ON TABLE grades IS 'Private (gold): each eligible reference''s grade for its target, as the latest build left it: tier 1-3 with a role for an antecedent, tier 0 (cited, not an antecedent) with no role; a rationale at every tier. Only tiers 1-3 become qrels. A version keeps its own copy in version_grades.';
COMMENT ON COLUMN grades.target_id IS 'The target (targets.paper_id).';
COMMENT ON COLUMN grades.paper_id IS 'The graded reference (papers.paper_id; "references".paper_id).';
COMMENT ON COLUMN grades.tier IS '0 (not an antecedent) | 1 | 2 | 3 (most essential). Also the default linear gain.';
COMMENT ON COLUMN grades.role IS 'The antecedent''s role: problem | method-foundation | component | baseline | dataset-or-benchmark | background; NULL exactly at tier 0.';
COMMENT ON COLUMN grades.rationale IS 'The grader''s reason, never empty.';
COMMENT ON COLUMN grades.backend IS 'openai | rules.';
COMMENT ON COLUMN grades.model IS 'The grader''s model.';
COMMENT ON COLUMN grades.prompt_hash IS 'sha256 (hex) of the grade prompt''s template.';

-- 4. Split versions ------------------------------------------------------------------------------
COMMENT ON TABLE split_versions IS 'Each immutable build of a split, one row per version. The ID hashes the config and the content, so a version never changes under its ID; writing the same one again only moves written_at. Holds no target identity (counts and hashes only).';
COMMENT ON COLUMN split_versions.version_id IS 'The split, then 12 hex digits of a hash of the config and the content, e.g. eval-3f2a9c01b7de. Joins every version_id column.';
COMMENT ON COLUMN split_versions.split IS 'The split it is a version of: train | eval, or another configured.';
COMMENT ON COLUMN split_versions.label IS 'A label given at build time (--label); never changes; NULL: none.';
COMMENT ON COLUMN split_versions.config_hash IS 'sha256 (hex) of the settings that shape the content, the model and its host, the prompts and a fingerprint of the package''s code.';
COMMENT ON COLUMN split_versions.code_version IS 'The inspire-build package version that wrote it.';
COMMENT ON COLUMN split_versions.prompt_hashes IS 'JSON object: prompt name -> sha256 of its template.';
COMMENT ON COLUMN split_versions.models IS 'JSON object: llm (the model, rules-v1 for the rules backend), backend, grade_readings.';
COMMENT ON COLUMN split_versions.counts IS 'JSON object: instances, graded_antecedents (qrel rows), and targets_<status> per target status at build time.';
COMMENT ON COLUMN split_versions.created_at IS 'When it was first written.';
COMMENT ON COLUMN split_versions.status IS 'building | complete.';
COMMENT ON COLUMN split_versions.cutoff_jitter_days IS 'Days its published cutoffs lie within before the exact ones (0..this): the setting, or wider where it kept cutoffs an earlier version published.';
COMMENT ON COLUMN split_versions.written_at IS 'When it was last written; the latest version of a split is the one written last (latest_split_versions).';
COMMENT ON COLUMN split_versions.reviews IS 'For a version inspire build --apply-reviews wrote, JSON: base_version, review_ids (reviews.review_id) and the figures its card reports; NULL for a version the pipeline built.';
COMMENT ON COLUMN split_versions.cutoff_jitter_setting IS 'INSPIRE_CUTOFF_JITTER_DAYS the build ran with; NULL before migration 0019.';
COMMENT ON COLUMN split_versions.cutoffs_kept IS 'Instances whose cutoff an earlier version had published, kept as published; NULL before migration 0019.';

COMMENT ON VIEW latest_split_versions IS 'The version of each split written last (by written_at): one row per split, with every column of split_versions. A rebuild that gives an existing version makes it the latest again.';
COMMENT ON COLUMN latest_split_versions.version_id IS 'The split''s latest version (split_versions.version_id).';
COMMENT ON COLUMN latest_split_versions.split IS 'The split.';
COMMENT ON COLUMN latest_split_versions.label IS 'As split_versions.label.';
COMMENT ON COLUMN latest_split_versions.config_hash IS 'As split_versions.config_hash.';
COMMENT ON COLUMN latest_split_versions.code_version IS 'As split_versions.code_version.';
COMMENT ON COLUMN latest_split_versions.prompt_hashes IS 'As split_versions.prompt_hashes (JSON).';
COMMENT ON COLUMN latest_split_versions.models IS 'As split_versions.models (JSON).';
COMMENT ON COLUMN latest_split_versions.counts IS 'As split_versions.counts (JSON).';
COMMENT ON COLUMN latest_split_versions.created_at IS 'As split_versions.created_at: first written.';
COMMENT ON COLUMN latest_split_versions.status IS 'As split_versions.status: building | complete.';
COMMENT ON COLUMN latest_split_versions.cutoff_jitter_days IS 'As split_versions.cutoff_jitter_days.';
COMMENT ON COLUMN latest_split_versions.written_at IS 'As split_versions.written_at: last written, which made it the latest.';
COMMENT ON COLUMN latest_split_versions.reviews IS 'As split_versions.reviews (JSON; NULL for a pipeline build).';
COMMENT ON COLUMN latest_split_versions.cutoff_jitter_setting IS 'As split_versions.cutoff_jitter_setting.';
COMMENT ON COLUMN latest_split_versions.cutoffs_kept IS 'As split_versions.cutoffs_kept.';

COMMENT ON TABLE instances IS 'Private (target_id): the benchmark items of each split version, one per accepted target. instance_id, brief and cutoff_date are the public side inspire export publishes; target_id is evaluator-only. For each instance''s target, split and title, query instance_targets.';
COMMENT ON COLUMN instances.version_id IS 'The split version (split_versions.version_id).';
COMMENT ON COLUMN instances.instance_id IS 'Public. 16 hex digits of an HMAC of version and target under the instance key: opaque, it reveals nothing about the target.';
COMMENT ON COLUMN instances.target_id IS 'Private, evaluator-only: the target (targets.paper_id; papers.paper_id).';
COMMENT ON COLUMN instances.brief_id IS 'The accepted brief (briefs.brief_id).';
COMMENT ON COLUMN instances.brief IS 'Public. The brief''s text: what an agent is given.';
COMMENT ON COLUMN instances.cutoff_date IS 'Public (exported as cutoff). The published cutoff: an agent may use only papers public strictly before it.';
COMMENT ON COLUMN instances.n_antecedents IS 'Graded antecedents (tiers 1-3): the instance''s qrel rows.';

COMMENT ON VIEW train_latest IS 'Private (target_id): the instances of the train split''s latest version (latest_split_versions), with every column of instances.';
COMMENT ON COLUMN train_latest.version_id IS 'The train split''s latest version.';
COMMENT ON COLUMN train_latest.instance_id IS 'Public: the opaque instance ID (instances.instance_id).';
COMMENT ON COLUMN train_latest.target_id IS 'Private, evaluator-only: the target (targets.paper_id).';
COMMENT ON COLUMN train_latest.brief_id IS 'The accepted brief (briefs.brief_id).';
COMMENT ON COLUMN train_latest.brief IS 'Public: the brief an agent is given.';
COMMENT ON COLUMN train_latest.cutoff_date IS 'Public: the published cutoff.';
COMMENT ON COLUMN train_latest.n_antecedents IS 'Graded antecedents (tiers 1-3).';

COMMENT ON VIEW eval_latest IS 'Private (target_id): the instances of the eval split''s latest version (latest_split_versions), with every column of instances.';
COMMENT ON COLUMN eval_latest.version_id IS 'The eval split''s latest version.';
COMMENT ON COLUMN eval_latest.instance_id IS 'Public: the opaque instance ID (instances.instance_id).';
COMMENT ON COLUMN eval_latest.target_id IS 'Private, evaluator-only: the target (targets.paper_id).';
COMMENT ON COLUMN eval_latest.brief_id IS 'The accepted brief (briefs.brief_id).';
COMMENT ON COLUMN eval_latest.brief IS 'Public: the brief an agent is given.';
COMMENT ON COLUMN eval_latest.cutoff_date IS 'Public: the published cutoff.';
COMMENT ON COLUMN eval_latest.n_antecedents IS 'Graded antecedents (tiers 1-3).';

COMMENT ON VIEW instance_targets IS 'Private (targets'' identities): each instance of each split version with its split and its target, the target''s ID named target_id as everywhere but targets. Which targets version V holds: SELECT split, target_id, title FROM instance_targets WHERE version_id = ''V''. The target''s columns (title, first_public_date, target_status, target_outcome) come from targets as the latest build of the split left them; NULL where it left no row.';
COMMENT ON COLUMN instance_targets.version_id IS 'The split version (split_versions.version_id).';
COMMENT ON COLUMN instance_targets.split IS 'The version''s split (split_versions.split).';
COMMENT ON COLUMN instance_targets.version_label IS 'The version''s label (split_versions.label); NULL: none.';
COMMENT ON COLUMN instance_targets.instance_id IS 'The opaque instance ID (instances.instance_id).';
COMMENT ON COLUMN instance_targets.target_id IS 'The target (instances.target_id = targets.paper_id = papers.paper_id).';
COMMENT ON COLUMN instance_targets.title IS 'The target''s title (targets.title).';
COMMENT ON COLUMN instance_targets.first_public_date IS 'The target''s first public date (targets.first_public_date). Private: with cutoff_date it gives away the secret offset.';
COMMENT ON COLUMN instance_targets.cutoff_date IS 'The published cutoff the version gives the instance (instances.cutoff_date).';
COMMENT ON COLUMN instance_targets.n_antecedents IS 'Graded antecedents (tiers 1-3) of the instance (instances.n_antecedents).';
COMMENT ON COLUMN instance_targets.brief_id IS 'The instance''s brief (briefs.brief_id).';
COMMENT ON COLUMN instance_targets.target_status IS 'The target''s status now (targets.status): candidate | accepted | excluded; a later build may have changed it since the version was written.';
COMMENT ON COLUMN instance_targets.target_outcome IS 'The target''s outcome now (targets.outcome).';

COMMENT ON TABLE qrels IS 'Private (gold): the graded antecedents of each instance of each split version, tiers 1-3; what a run is scored against.';
COMMENT ON COLUMN qrels.version_id IS 'The split version (split_versions.version_id).';
COMMENT ON COLUMN qrels.instance_id IS 'The instance (instances.instance_id, with version_id).';
COMMENT ON COLUMN qrels.paper_id IS 'The antecedent (papers.paper_id).';
COMMENT ON COLUMN qrels.tier IS '1 | 2 | 3 (most essential); the default linear gain.';
COMMENT ON COLUMN qrels.role IS 'problem | method-foundation | component | baseline | dataset-or-benchmark | background.';

COMMENT ON TABLE version_grades IS 'Private (gold): a version''s own copy of every grade of its targets when it was written (tier 0 included, each with its rationale); a later build that regrades a target changes grades, never this. Versions written before migration 0012 have none.';
COMMENT ON COLUMN version_grades.version_id IS 'The split version (split_versions.version_id).';
COMMENT ON COLUMN version_grades.target_id IS 'The target (targets.paper_id).';
COMMENT ON COLUMN version_grades.paper_id IS 'The graded reference (papers.paper_id).';
COMMENT ON COLUMN version_grades.tier IS '0 (not an antecedent) | 1 | 2 | 3.';
COMMENT ON COLUMN version_grades.role IS 'The antecedent''s role; NULL exactly at tier 0.';
COMMENT ON COLUMN version_grades.rationale IS 'The grader''s reason.';

COMMENT ON TABLE version_findings IS 'Private (judged against targets): a version''s own copy of its briefs'' leakage findings, as the build judged them, per instance and check.';
COMMENT ON COLUMN version_findings.version_id IS 'The split version (split_versions.version_id).';
COMMENT ON COLUMN version_findings.instance_id IS 'The instance (instances.instance_id).';
COMMENT ON COLUMN version_findings."check" IS 'lexical | identity | retrieval | mechanism | search. Quote it: check is an SQL keyword.';
COMMENT ON COLUMN version_findings.passed IS 'True when the brief passed the check.';
COMMENT ON COLUMN version_findings.level IS 'How much leaked: none | partial | full.';
COMMENT ON COLUMN version_findings.detail IS 'What the check saw, for humans.';

-- Evaluation -------------------------------------------------------------------------------------
COMMENT ON TABLE eval_runs IS 'Each scored run (inspire eval): a ranking file scored against a split version''s qrels or a TREC qrels file. Names no target.';
COMMENT ON COLUMN eval_runs.run_id IS '16 hex digits of a hash of name, version, the run file''s sha256 and the gains. Joins eval_scores.run_id.';
COMMENT ON COLUMN eval_runs.version_id IS 'The split version scored against (split_versions.version_id); NULL: scored against a TREC qrels file.';
COMMENT ON COLUMN eval_runs.name IS 'The run''s name: --name, else its file''s name without the extension.';
COMMENT ON COLUMN eval_runs.run_sha256 IS 'sha256 (hex) of the run file.';
COMMENT ON COLUMN eval_runs.params IS 'JSON: gains (linear | exponential) and bootstrap_samples.';
COMMENT ON COLUMN eval_runs.n_instances IS 'Instances scored.';
COMMENT ON COLUMN eval_runs.has_trajectories IS 'True when a trajectory file came with the run.';
COMMENT ON COLUMN eval_runs.created_at IS 'When it was scored.';

COMMENT ON TABLE eval_scores IS 'Each run''s metric values: one row per instance and metric, plus the mean over instances (instance_id = ''*'') with its 95% bootstrap interval.';
COMMENT ON COLUMN eval_scores.run_id IS 'The run (eval_runs.run_id).';
COMMENT ON COLUMN eval_scores.instance_id IS 'The instance (instances.instance_id), or ''*'' for the mean over instances.';
COMMENT ON COLUMN eval_scores.metric IS 'The metric: ndcg@10 | recall@10 | mrr | anyhit@10 | hits>=3 | hits>=5, and others the evaluation adds (inspire_build/evaluation/).';
COMMENT ON COLUMN eval_scores.value IS 'The metric''s value for the instance, or its mean over instances on the ''*'' row.';
COMMENT ON COLUMN eval_scores.ci_low IS 'Lower bound of the 95% bootstrap interval, on ''*'' rows only; NULL on per-instance rows.';
COMMENT ON COLUMN eval_scores.ci_high IS 'Upper bound of the 95% bootstrap interval, on ''*'' rows only; NULL on per-instance rows.';

-- The search environment -------------------------------------------------------------------------
COMMENT ON TABLE corpus IS 'Public (what agents search): the search environment''s corpus, antecedents among distractors, one row per work (a preprint and its published twin merged). A work is shown to an instance only when public_by is before its cutoff.';
COMMENT ON COLUMN corpus.paper_id IS 'The work''s paper ID: the warehouse''s (papers.paper_id) where known, else its canonical ID.';
COMMENT ON COLUMN corpus.title IS 'The title.';
COMMENT ON COLUMN corpus.abstract IS 'The abstract; NULL when none.';
COMMENT ON COLUMN corpus.year IS 'Publication year.';
COMMENT ON COLUMN corpus.authors IS 'Author display names, in byline order.';
COMMENT ON COLUMN corpus.first_public_date IS 'The earliest first public date over the merged records; NULL: undated, never shown.';
COMMENT ON COLUMN corpus.date_precision IS 'day | month | year, of the winning date.';
COMMENT ON COLUMN corpus.first_public_source IS 'Which source''s date won: arxiv | openalex | s2.';
COMMENT ON COLUMN corpus.public_by IS 'The last day it may have become public (the end of a month- or year-precision date): shown to an instance iff public_by < its cutoff.';
COMMENT ON COLUMN corpus.records IS 'Records merged into this work (2 for a preprint and its published twin).';
COMMENT ON COLUMN corpus.origin IS 'Where it came from: sandbox-world | openalex | snapshot.';
COMMENT ON COLUMN corpus.added_at IS 'When inspire corpus build added it.';

COMMENT ON TABLE corpus_ids IS 'Public: every ID of every record merged into a corpus work; an ID two works claim stays with the first.';
COMMENT ON COLUMN corpus_ids.scheme IS 'arxiv | doi | openalex | s2 | corpusid.';
COMMENT ON COLUMN corpus_ids.value IS 'The ID in canonical form (inspire_build/ids.py).';
COMMENT ON COLUMN corpus_ids.paper_id IS 'The corpus work it belongs to (corpus.paper_id).';

COMMENT ON TABLE env_sessions IS 'Each agent session on one instance: one budget, one final submission. From inspire agent run, or the tool server (inspire env serve), where it persists while open. Names no target (instance IDs only).';
COMMENT ON COLUMN env_sessions.session_id IS '16 hex digits, random. Joins env_steps.session_id.';
COMMENT ON COLUMN env_sessions.run_name IS 'The run it belongs to: the tool server''s run name, or <agent>-<12 hex digits> for an inspire agent run; one session per run and instance. NULL on rows written before migration 0009.';
COMMENT ON COLUMN env_sessions.version_id IS 'The split version (split_versions.version_id).';
COMMENT ON COLUMN env_sessions.instance_id IS 'The instance (instances.instance_id).';
COMMENT ON COLUMN env_sessions.agent IS 'The agent''s name: bm25-brief, multi-query, or the name an external agent gave.';
COMMENT ON COLUMN env_sessions.backend IS 'What the search tool searches: local (the corpus, bm25) | openalex.';
COMMENT ON COLUMN env_sessions.budget IS 'Tool calls allowed.';
COMMENT ON COLUMN env_sessions.calls IS 'Tool calls made.';
COMMENT ON COLUMN env_sessions.status IS 'open (still running) | submitted | abandoned (ended without a submission).';
COMMENT ON COLUMN env_sessions.ranking IS 'The submitted paper IDs, best first; NULL until submitted.';
COMMENT ON COLUMN env_sessions.token_sha256 IS 'sha256 (hex) of the session''s token, never the token; NULL where the session has none.';
COMMENT ON COLUMN env_sessions.scores_revealed IS 'True when a debugging tool server showed the session its scores (such a run is not a fair result).';
COMMENT ON COLUMN env_sessions.started_at IS 'When the session opened.';
COMMENT ON COLUMN env_sessions.finished_at IS 'When it submitted or was abandoned; NULL while open.';

COMMENT ON TABLE env_steps IS 'Each logged tool call of an agent session, in call order.';
COMMENT ON COLUMN env_steps.session_id IS 'The session (env_sessions.session_id).';
COMMENT ON COLUMN env_steps.step IS '1, 2, ... in call order.';
COMMENT ON COLUMN env_steps.tool IS 'search | read.';
COMMENT ON COLUMN env_steps.query IS 'The search text, or the paper ID read.';
COMMENT ON COLUMN env_steps.k IS 'Results asked for (search); NULL for a read.';
COMMENT ON COLUMN env_steps.exposed IS 'The paper IDs the call showed the agent.';
COMMENT ON COLUMN env_steps.latency_ms IS 'Time the call took, in milliseconds.';

-- Builds and the information boundary ------------------------------------------------------------
COMMENT ON TABLE build_runs IS 'Every build, one row each, so builds that waited, failed, were cancelled or killed all leave a record. Names no target.';
COMMENT ON COLUMN build_runs.run_id IS 'The Prefect flow run''s ID (a UUID). Joins llm_call_uses.run_id.';
COMMENT ON COLUMN build_runs.split IS 'The split it builds.';
COMMENT ON COLUMN build_runs.status IS 'running | completed | failed | cancelled (Ctrl-C or SIGTERM) | interrupted (its process died).';
COMMENT ON COLUMN build_runs.reason IS 'Why it failed or stopped, for humans; NULL when completed.';
COMMENT ON COLUMN build_runs.version_id IS 'The split version it wrote (split_versions.version_id), once completed.';
COMMENT ON COLUMN build_runs.requested_at IS 'When it asked for the warehouse.';
COMMENT ON COLUMN build_runs.started_at IS 'When it got the warehouse''s write lock.';
COMMENT ON COLUMN build_runs.waited_s IS 'Seconds it waited for another process''s lock.';
COMMENT ON COLUMN build_runs.finished_at IS 'When it ended; NULL while running.';
COMMENT ON COLUMN build_runs.pid IS 'The operating-system process ID that ran it (to tell a dead build from a running one).';

COMMENT ON TABLE instance_key IS 'Private (the secret): the key that keys instance IDs and cutoff offsets. Never exported publicly, never in the card; whoever holds it can recover every instance''s target. One row per warehouse.';
COMMENT ON COLUMN instance_key.key_id IS 'Always ''default'': one key per warehouse.';
COMMENT ON COLUMN instance_key.secret_hex IS 'The key: 64 hex digits (inspire key export prints it).';
COMMENT ON COLUMN instance_key.origin IS 'generated (by this warehouse) | environment (INSPIRE_INSTANCE_KEY).';
COMMENT ON COLUMN instance_key.created_at IS 'When it was stored.';

COMMENT ON TABLE published_cutoffs IS 'Private (the offsets the jitter hides): one published cutoff per target. The first version of any split that holds a target stores it; every later build keeps that offset whatever the jitter setting, so versions cannot be intersected to find the exact cutoff.';
COMMENT ON COLUMN published_cutoffs.target_id IS 'The target (targets.paper_id).';
COMMENT ON COLUMN published_cutoffs.offset_days IS 'Days the published cutoff lies before the exact one (first public date minus 3 months): the secret, 0..jitter_days.';
COMMENT ON COLUMN published_cutoffs.jitter_days IS 'The jitter it lies within: offset_days <= this (a public bound).';
COMMENT ON COLUMN published_cutoffs.cutoff_date IS 'The cutoff as first published.';
COMMENT ON COLUMN published_cutoffs.version_id IS 'The version that published it first (split_versions.version_id).';
COMMENT ON COLUMN published_cutoffs.published_at IS 'When that version was written.';

COMMENT ON TABLE boundary_audits IS 'Per split version, the attacks inspire audit and inspire export run on its public side, and the boundary''s verdict. Aggregates only: names no target.';
COMMENT ON COLUMN boundary_audits.version_id IS 'The split version (split_versions.version_id).';
COMMENT ON COLUMN boundary_audits.jitter_days IS 'cutoff_jitter_days the version was built with.';
COMMENT ON COLUMN boundary_audits.instances IS 'Instances attacked.';
COMMENT ON COLUMN boundary_audits.exact_cutoffs IS 'Instances whose public cutoff equals the exact one (target first public date minus 3 months).';
COMMENT ON COLUMN boundary_audits.hash_tried IS 'Hashes computed: candidate IDs x public strings x formats.';
COMMENT ON COLUMN boundary_audits.hash_recovered IS 'Instance IDs a hash of public data reproduced (must be 0).';
COMMENT ON COLUMN boundary_audits.window_median IS 'Median over instances of the warehouse papers consistent with a public cutoff (the window).';
COMMENT ON COLUMN boundary_audits.window_p10 IS '10th percentile of the same window sizes.';
COMMENT ON COLUMN boundary_audits.window_top1 IS 'Share (0-1) of instances whose target the bm25 attacker ranks first in its window.';
COMMENT ON COLUMN boundary_audits.window_top10 IS 'Share (0-1) of instances whose target it ranks in the top 10.';
COMMENT ON COLUMN boundary_audits.audited_at IS 'When the audit ran.';
COMMENT ON COLUMN boundary_audits.verdict IS 'passed | failed | too sparse to judge.';
COMMENT ON COLUMN boundary_audits.reasons IS 'Why it did not pass, ''; ''-separated; NULL: passed.';
COMMENT ON COLUMN boundary_audits.anonymity_min IS 'The smallest anonymity set: papers in a window that the card''s public selection criteria would select.';
COMMENT ON COLUMN boundary_audits.anonymity_p10 IS '10th percentile of the anonymity sets.';
COMMENT ON COLUMN boundary_audits.anonymity_median IS 'Median anonymity set.';
COMMENT ON COLUMN boundary_audits.attackers IS 'JSON list, one object per attacker: name, n, top1, top10 and their chance levels chance1, chance10.';

COMMENT ON TABLE audit_verdicts IS 'Per split version, the verdict of its latest inspire audit (briefs and boundary); inspire export publishes only a version whose latest audit passed, unless forced. Names no target.';
COMMENT ON COLUMN audit_verdicts.version_id IS 'The split version (split_versions.version_id).';
COMMENT ON COLUMN audit_verdicts.split IS 'Its split.';
COMMENT ON COLUMN audit_verdicts.verdict IS 'passed | failed | too sparse to judge.';
COMMENT ON COLUMN audit_verdicts.reasons IS 'Why it did not pass, ''; ''-separated; NULL: passed.';
COMMENT ON COLUMN audit_verdicts.audited_at IS 'When the audit ran.';

-- Bulk data --------------------------------------------------------------------------------------
COMMENT ON TABLE bulk_files IS 'Each bulk distribution file ingested whole (inspire snapshot ingest), in one transaction with its records; a rerun skips a file whose size and modification time are unchanged. Public source data.';
COMMENT ON COLUMN bulk_files.path IS 'The file''s path as given to ingest.';
COMMENT ON COLUMN bulk_files.kind IS 'openalex-works | s2-papers | s2-abstracts | s2-citations | s2-paper-ids | arxiv-metadata.';
COMMENT ON COLUMN bulk_files.release IS 'The distribution''s release date; NULL when the path names none.';
COMMENT ON COLUMN bulk_files.bytes IS 'File size, in bytes.';
COMMENT ON COLUMN bulk_files.modified_ns IS 'File modification time, in nanoseconds since the Unix epoch.';
COMMENT ON COLUMN bulk_files.rows IS 'Records ingested from it.';
COMMENT ON COLUMN bulk_files.seconds IS 'Seconds the ingest took.';
COMMENT ON COLUMN bulk_files.ingested_at IS 'When it was ingested.';

COMMENT ON TABLE bulk_records IS 'One parsed record per source and ID from the bulk files: the Paper the source''s parse gives, from the newest release that holds it. Public source data.';
COMMENT ON COLUMN bulk_records.source IS 'openalex | s2 | arxiv.';
COMMENT ON COLUMN bulk_records.record_id IS 'The record''s ID in its source: the OpenAlex work ID (W123), the S2 corpus ID, or the arXiv ID.';
COMMENT ON COLUMN bulk_records.paper IS 'The parsed record, as the Paper model''s JSON (schemas/models/Paper.json).';
COMMENT ON COLUMN bulk_records.file IS 'The file it came from (bulk_files.path).';
COMMENT ON COLUMN bulk_records.release IS 'That file''s release date.';
COMMENT ON COLUMN bulk_records.primary_field IS 'OpenAlex only: the numeric ID of the primary topic''s field (17 is Computer Science), as the candidate filter tests it.';
COMMENT ON COLUMN bulk_records.on_arxiv IS 'OpenAlex only: the work has an arXiv location.';
COMMENT ON COLUMN bulk_records.published IS 'OpenAlex only: the publication date.';
COMMENT ON COLUMN bulk_records.listed_references IS 'OpenAlex only: referenced_works_count.';

COMMENT ON TABLE bulk_ids IS 'Every typed ID of every bulk record, per source: the bulk side''s ID crosswalk.';
COMMENT ON COLUMN bulk_ids.scheme IS 'doi | arxiv | openalex | s2 | corpusid.';
COMMENT ON COLUMN bulk_ids.value IS 'The ID in canonical form (inspire_build/ids.py).';
COMMENT ON COLUMN bulk_ids.source IS 'The record''s source: openalex | s2 | arxiv.';
COMMENT ON COLUMN bulk_ids.record_id IS 'The record (bulk_records.record_id, with source).';

COMMENT ON TABLE bulk_abstracts IS 'The S2 Datasets'' abstracts, by corpus ID.';
COMMENT ON COLUMN bulk_abstracts.corpus_id IS 'The S2 corpus ID.';
COMMENT ON COLUMN bulk_abstracts.abstract IS 'The abstract.';
COMMENT ON COLUMN bulk_abstracts.file IS 'The file it came from (bulk_files.path).';
COMMENT ON COLUMN bulk_abstracts.release IS 'That file''s release date.';

COMMENT ON TABLE bulk_citations IS 'The S2 Datasets'' citations: one row per citing-cited pair.';
COMMENT ON COLUMN bulk_citations.citing_corpus_id IS 'The citing paper''s S2 corpus ID.';
COMMENT ON COLUMN bulk_citations.cited_corpus_id IS 'The cited paper''s S2 corpus ID; NULL: the citation names no paper S2 knows.';
COMMENT ON COLUMN bulk_citations.is_influential IS 'S2''s influential-citation flag.';
COMMENT ON COLUMN bulk_citations.contexts IS 'The citing sentences.';
COMMENT ON COLUMN bulk_citations.intents IS 'S2''s citation intents.';
COMMENT ON COLUMN bulk_citations.file IS 'The file it came from (bulk_files.path).';
COMMENT ON COLUMN bulk_citations.release IS 'That file''s release date.';

COMMENT ON TABLE bulk_paper_ids IS 'The S2 Datasets'' map from paper sha to corpus ID.';
COMMENT ON COLUMN bulk_paper_ids.sha IS 'An S2 paper sha (the 40-hex paper ID of the S2 API).';
COMMENT ON COLUMN bulk_paper_ids.corpus_id IS 'The S2 corpus ID it maps to.';
COMMENT ON COLUMN bulk_paper_ids.is_primary IS 'True for the corpus ID''s primary sha.';
COMMENT ON COLUMN bulk_paper_ids.file IS 'The file it came from (bulk_files.path).';
COMMENT ON COLUMN bulk_paper_ids.release IS 'That file''s release date.';

-- Curator review ---------------------------------------------------------------------------------
COMMENT ON TABLE reviews IS 'Private (names targets and gold): every curator decision (inspire review serve), one row per action, never rewritten. Per target the latest row of each kind stands; inspire build --apply-reviews applies them in a new version.';
COMMENT ON COLUMN reviews.review_id IS '1, 2, ... in the order the actions were taken.';
COMMENT ON COLUMN reviews.split IS 'The split.';
COMMENT ON COLUMN reviews.version_id IS 'The version the curator was reading (split_versions.version_id).';
COMMENT ON COLUMN reviews.instance_id IS 'Its instance (instances.instance_id).';
COMMENT ON COLUMN reviews.target_id IS 'Evaluator-only: the target the decision is about (targets.paper_id); it holds in every version of the split.';
COMMENT ON COLUMN reviews.paper_id IS 'The regraded reference (papers.paper_id), for action grade only; NULL otherwise.';
COMMENT ON COLUMN reviews.action IS 'accept | reject | grade | leak | brief.';
COMMENT ON COLUMN reviews.curator IS 'The name the deciding browser session gave.';
COMMENT ON COLUMN reviews.created_at IS 'When the decision was made.';
COMMENT ON COLUMN reviews.before IS 'What the curator saw, as JSON.';
COMMENT ON COLUMN reviews.after IS 'What the curator decided, as JSON: a reason, a tier and role, a leak note with the brief it was made on, an edited brief with its re-audit, or a draft''s broken rules.';
COMMENT ON COLUMN reviews.based_on IS 'The standing review of the same kind the curator''s page showed, which this one replaces (reviews.review_id); NULL: none stood.';
COMMENT ON COLUMN reviews.draft IS 'True for a rewritten brief that breaks the build''s length or lexical rule, kept as a draft: --apply-reviews refuses while it stands.';

COMMENT ON TABLE review_samples IS 'Private (month and tier are evaluator-only): each version''s review sample (inspire review sample), seeded and stratified by its target''s first public month and its highest gold tier; drawing again replaces the version''s rows. The card and inspire audit estimate model-curator agreement from it.';
COMMENT ON COLUMN review_samples.version_id IS 'The version sampled (split_versions.version_id).';
COMMENT ON COLUMN review_samples.instance_id IS 'One of its instances, drawn (instances.instance_id).';
COMMENT ON COLUMN review_samples.split IS 'The version''s split.';
COMMENT ON COLUMN review_samples.position IS '1, 2, ... in the seeded order of the draw.';
COMMENT ON COLUMN review_samples.month IS 'Evaluator-only: the target''s first public month, YYYY-MM, or undated.';
COMMENT ON COLUMN review_samples.tier IS 'Evaluator-only: the instance''s highest gold tier, 1-3 (0: it has no qrel).';
COMMENT ON COLUMN review_samples.seed IS 'The draw''s seed.';
COMMENT ON COLUMN review_samples.requested IS 'The sample size asked for (more than the version holds: all of it).';
COMMENT ON COLUMN review_samples.drawn_at IS 'When it was drawn.';
