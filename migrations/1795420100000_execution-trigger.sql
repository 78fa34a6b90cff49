-- Up Migration

-- What started a run: the producer (schedule), an operator (manual: run now,
-- a queued report), a backfill, or a re-drive of a failed task.
ALTER TABLE scheduler_execution
  ADD COLUMN trigger text NOT NULL DEFAULT 'schedule'
    CONSTRAINT scheduler_execution_trigger_known
    CHECK (trigger IN ('schedule', 'manual', 'backfill', 'redrive'));

UPDATE scheduler_execution SET trigger = 'redrive' WHERE execution_key LIKE 'redrive-%';
UPDATE scheduler_execution SET trigger = 'manual' WHERE execution_key LIKE 'manual-%';

CREATE INDEX scheduler_execution_trigger_idx
  ON scheduler_execution (scheduler_id, trigger, executed_at DESC);

-- Down Migration

DROP INDEX scheduler_execution_trigger_idx;
ALTER TABLE scheduler_execution DROP COLUMN trigger;
