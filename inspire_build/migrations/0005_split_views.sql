-- 0005_split_views: a version's status, and the latest instances of each default split.
ALTER TABLE split_versions ADD COLUMN status VARCHAR;   -- building | complete
CREATE VIEW train_latest AS
SELECT i.* FROM instances i JOIN latest_split_versions v USING (version_id) WHERE v.split = 'train';
CREATE VIEW eval_latest AS
SELECT i.* FROM instances i JOIN latest_split_versions v USING (version_id) WHERE v.split = 'eval';
