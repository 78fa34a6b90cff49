-- Up Migration

-- A delivery whose message the broker dropped (the webhook queue's delivery
-- limit, a purge, a lost node) would stay pending for ever: the consumer
-- role's sweep publishes such a delivery again, and after a few times fails
-- it in the delivery log (issue 27 review). This counts those times.
ALTER TABLE webhook_delivery
  ADD COLUMN republished integer NOT NULL DEFAULT 0;

-- The sweep looks only at deliveries not finished yet.
CREATE INDEX webhook_delivery_unfinished_idx ON webhook_delivery (id)
  WHERE status IN ('pending', 'retrying');

-- Down Migration

DROP INDEX webhook_delivery_unfinished_idx;
ALTER TABLE webhook_delivery DROP COLUMN republished;
