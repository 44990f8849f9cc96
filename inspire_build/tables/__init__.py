"""The warehouse's table modules: each family of tables is queried here and nowhere else (with
``warehouse``, which owns the connection, migrations, transactions and the generic writes).

- ``lineage``: papers, paper_ids, references, targets, gold_completeness;
- ``crosswalk``: paper_ids read as typed IDs, and one scheme's values looked up;
- ``search``: full-text search over papers (the FTS extension, the bm25 index, word counts);
- ``corpus``: the corpus replaced with its bm25 index, and searched as of a cutoff;
- ``gold``: briefs, audit_findings, grades;
- ``versions``: split_versions, instances, qrels, version_grades, version_findings and the
  latest-version views;
- ``llm_log``: llm_calls, llm_batches;
- ``raw``: raw_http;
- ``env``: corpus, corpus_ids, env_sessions, env_steps;
- ``keys``: instance_key.

``targets``, ``briefs``, ``grades``, ``split_versions`` and ``instances`` are written from their
domain models (``inspire_build.models``) and read back into them, through ``model_rows``: every
column is a field of its model (tests/unit/tables/test_model_rows.py).

A test (tests/unit/test_architecture.py) keeps SQL text out of every other module.
"""
