-- 0011_version_written_at: "latest" is the version most recently written. A version's ID hashes
-- its content, so writing it again changes no row of it, only `written_at`; `created_at` keeps
-- its first write.
ALTER TABLE split_versions ADD COLUMN written_at TIMESTAMPTZ;
UPDATE split_versions SET written_at = created_at;
CREATE OR REPLACE VIEW latest_split_versions AS
SELECT * EXCLUDE (rank_in_split)
FROM (
    SELECT *, row_number() OVER (
                  PARTITION BY split ORDER BY written_at DESC, created_at DESC, version_id DESC
              ) AS rank_in_split
    FROM split_versions
)
WHERE rank_in_split = 1;
