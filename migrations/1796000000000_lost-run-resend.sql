-- Up Migration

-- The lost-run sweep (src/producer/lost-run-sweep.ts): a run left published
-- or retrying with no message behind it (the broker lost it) is sent again.
-- `resent` counts those sends and is carried by each copy as `x-resent`; a
-- delivery older than the run's count is a copy the sweep replaced and never
-- starts, so a message thought lost that turns up after all does not run the
-- task a second time. `resent_at` is when the last copy was confirmed: the
-- sweep waits its whole time again from there.
ALTER TABLE scheduler_execution
  ADD COLUMN resent integer NOT NULL DEFAULT 0,
  ADD COLUMN resent_at timestamptz;

-- Down Migration

ALTER TABLE scheduler_execution
  DROP COLUMN resent_at,
  DROP COLUMN resent;
