-- Up Migration

-- allow (the spec's behaviour): every due run is published. skip: a due run
-- is not published while an earlier run of the same scheduler is still
-- claimed, published, running or retrying; its ledger row says skipped, and why.
ALTER TABLE scheduler
  ADD COLUMN overlap_policy text NOT NULL DEFAULT 'allow'
    CONSTRAINT scheduler_overlap_policy_known CHECK (overlap_policy IN ('allow', 'skip'));

-- The producer's "is a run of this scheduler still going?" question.
CREATE INDEX scheduler_execution_open_idx
  ON scheduler_execution (scheduler_id)
  WHERE status IN ('claimed', 'published', 'running', 'retrying');

-- Down Migration

DROP INDEX scheduler_execution_open_idx;
ALTER TABLE scheduler DROP COLUMN overlap_policy;
