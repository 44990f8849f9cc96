-- 0024_review_integrity: what a review row needs so that curators working at once, and a brief
-- that breaks the build's rules, cannot slip a decision through `inspire review serve`.
-- The standing review of the same kind (the verdict, the reference's grade, the leak mark, the
-- brief) that the curator's page showed when they decided: the review this one replaces. A
-- decision made over another than the one standing then is refused (409), never recorded.
-- Null: none stood (and for every row written before 0024).
ALTER TABLE reviews ADD COLUMN based_on INTEGER;
-- True for a rewritten brief that breaks the build's length or lexical rule, kept as a draft:
-- it is not re-audited, and `inspire build --apply-reviews` refuses while it stands. False for
-- every other row (and for every row written before 0024).
ALTER TABLE reviews ADD COLUMN draft BOOLEAN DEFAULT false;
