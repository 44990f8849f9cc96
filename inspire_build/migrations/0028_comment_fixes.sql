-- 0028_comment_fixes: comments a user review found saying other than the data (session 28).
COMMENT ON COLUMN gold_completeness.sources IS 'The sources the lineage consulted for the target: openalex and s2 for its reference lists, arxiv for first public dates.';
COMMENT ON COLUMN briefs.reason IS 'For humans: the checks a rejected brief failed, with their details; for an accepted one, the checks it passed.';
COMMENT ON TABLE eval_scores IS 'Each run''s metric values: one row per instance and metric, plus the mean over instances (instance_id = ''*'') with its 95% bootstrap interval. The funnel''s ratios of sums (gain_kept, rank_quality) and unexposed_submissions have the ''*'' row alone; a value that is undefined (no instance has one, or a ratio of nothing) is NULL.';
