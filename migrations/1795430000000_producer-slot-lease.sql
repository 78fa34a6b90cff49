-- Up Migration

-- One producer of a fleet evaluates each minute slot: the one whose lease
-- insert wins. Its peers wait for done_at and take the slot over once
-- taken_at is older than CRON_SLOT_LEASE_MS (the holder died or stalls).
-- Claims stay exactly-once through scheduler_execution's unique key; the
-- lease only keeps the fleet's evaluation work from growing with its size.
CREATE TABLE producer_slot_lease (
  slot timestamptz PRIMARY KEY,
  holder text NOT NULL,
  taken_at timestamptz NOT NULL DEFAULT now(),
  done_at timestamptz,
  -- Set on a take-over: the holder whose lease expired (for the log).
  previous_holder text
);

-- Down Migration

DROP TABLE producer_slot_lease;
