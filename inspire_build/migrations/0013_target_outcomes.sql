-- 0013_target_outcomes: a target's outcome in typed columns beside its reason, so that no code
-- (and no query) parses a reason string. `outcome` is the kind of the reason (selected,
-- over_limit, no_date, outside_window, no_references, no_eligible_reference, lineage_resolved,
-- llm_failed, every_brief_leaked, grading_failed, no_graded_antecedent, accepted);
-- `source_problems` is what the sources could not say about the target (null: nothing).
-- Rows written before this migration get both from their reasons, once, here.
ALTER TABLE targets ADD COLUMN outcome VARCHAR;
ALTER TABLE targets ADD COLUMN source_problems VARCHAR;

UPDATE targets SET
    source_problems = nullif(regexp_extract(reason, '\[source problems: (.*)\]$', 1), ''),
    outcome = CASE
        WHEN status = 'accepted' THEN 'accepted'
        WHEN reason LIKE 'selected:%' THEN 'selected'
        WHEN reason LIKE 'over the split''s limit%' THEN 'over_limit'
        WHEN reason LIKE 'no first public date%' THEN 'no_date'
        WHEN reason LIKE 'first public %' THEN 'outside_window'
        WHEN reason LIKE 'no source lists any reference%' THEN 'no_references'
        WHEN reason LIKE 'no reference is strictly before%' THEN 'no_eligible_reference'
        WHEN reason LIKE 'no eligible antecedent%' THEN 'no_eligible_reference'
        WHEN reason LIKE 'lineage resolved:%' THEN 'lineage_resolved'
        WHEN reason LIKE 'the LLM failed:%' THEN 'llm_failed'
        WHEN reason LIKE 'every brief leaked%' THEN 'every_brief_leaked'
        WHEN reason LIKE 'grading failed%' THEN 'grading_failed'
        WHEN reason LIKE 'the grader found no antecedent%' THEN 'no_graded_antecedent'
    END;
