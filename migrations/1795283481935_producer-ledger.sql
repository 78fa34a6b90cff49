-- Up Migration

-- IANA zone the schedule is read in; NULL means the service default (CRON_TZ).
ALTER TABLE scheduler ADD COLUMN timezone text;

-- The run ledger: which minute a claim is for, and how far it got.
ALTER TABLE scheduler_execution
  ADD COLUMN slot timestamptz,
  ADD COLUMN status text NOT NULL DEFAULT 'claimed',
  ADD COLUMN published_at timestamptz,
  ADD CONSTRAINT scheduler_execution_status_known CHECK (
    status IN ('claimed', 'published', 'running', 'retrying', 'succeeded', 'failed')
  );

-- The sweeper looks for claims whose publish was never confirmed.
CREATE INDEX scheduler_execution_unpublished_idx
  ON scheduler_execution (executed_at)
  WHERE published_at IS NULL;

-- Shared between producer instances: the last evaluated minute (to tell
-- downtime from a late tick) and the day the cleanup last ran.
CREATE TABLE producer_state (
  name text PRIMARY KEY,
  last_slot timestamptz,
  last_run_on date,
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- Down Migration

DROP TABLE producer_state;
DROP INDEX scheduler_execution_unpublished_idx;
ALTER TABLE scheduler_execution
  DROP CONSTRAINT scheduler_execution_status_known,
  DROP COLUMN published_at,
  DROP COLUMN status,
  DROP COLUMN slot;
ALTER TABLE scheduler DROP COLUMN timezone;
