-- 0015_lineage_texts: the title and abstract a target's LLM steps read, as its own lineage
-- resolved them: `targets.abstract` beside its title, and each reference's `work_title` and
-- `work_abstract`. A later chunk of the same build may rewrite a shared work's `papers` row
-- (with another source's record), so steps that read `papers` would see different text
-- depending on when they ran. Rows written before this migration get them from `papers`.
ALTER TABLE targets ADD COLUMN abstract VARCHAR;
ALTER TABLE "references" ADD COLUMN work_title VARCHAR;
ALTER TABLE "references" ADD COLUMN work_abstract VARCHAR;

UPDATE targets SET title = coalesce(p.title, targets.title), abstract = p.abstract
FROM papers p WHERE p.paper_id = targets.paper_id;
UPDATE "references" SET work_title = p.title, work_abstract = p.abstract
FROM papers p WHERE p.paper_id = "references".paper_id;
