-- Up Migration

-- True when the run printed more than TASK_OUTPUT_MAX_BYTES and the rest of
-- its output was dropped from the logs.
ALTER TABLE scheduler_execution
  ADD COLUMN output_truncated boolean NOT NULL DEFAULT false,
  -- Deliveries of the same attempt that started while the previous start had
  -- no outcome (its consumer died): at 2 the run is parked, not run again.
  ADD COLUMN unfinished_starts integer NOT NULL DEFAULT 0,
  -- The retry count those starts belong to: a later attempt counts afresh.
  ADD COLUMN unfinished_retry_count integer;

-- Down Migration

ALTER TABLE scheduler_execution
  DROP COLUMN unfinished_retry_count,
  DROP COLUMN unfinished_starts,
  DROP COLUMN output_truncated;
