-- Up Migration

-- The task message of a run an operator started (a re-drive with edited
-- params, a queued report), stored with the run in the transaction that
-- creates it: an outbox. When the publish outcome is unknown (no confirm),
-- the row stays and the producer's sweeper publishes exactly this payload,
-- instead of the API deleting a run the broker may already hold.
ALTER TABLE scheduler_execution ADD COLUMN payload jsonb;

-- Down Migration

ALTER TABLE scheduler_execution DROP COLUMN payload;
