-- Up Migration

-- Who hears about a scheduler's failures (issue 26, item 4).
ALTER TABLE scheduler
  ADD COLUMN notify jsonb NOT NULL
    DEFAULT '{"on_failure": true, "on_recovery": true, "email": false, "group": false}'::jsonb
    CONSTRAINT scheduler_notify_object CHECK (jsonb_typeof(notify) = 'object');

-- The outbox of failure notices: one row per parked run, written by the
-- statement that stores the failed task, so a crash before the owner is
-- told loses nothing; a run parked twice is stored (and noticed) once.
CREATE TABLE failure_notice_outbox (
  failed_task_id bigint PRIMARY KEY REFERENCES failed_task (id) ON DELETE CASCADE,
  scheduler_id integer NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  handled_at timestamptz
);
CREATE INDEX failure_notice_outbox_pending_idx
  ON failure_notice_outbox (failed_task_id) WHERE handled_at IS NULL;

-- Per scheduler: when the last notice went out, how many failures it has
-- not told of yet (the digest's count), and whether a recovery is owed.
CREATE TABLE failure_notice_state (
  scheduler_id integer PRIMARY KEY REFERENCES scheduler (id) ON DELETE CASCADE,
  last_notice_at timestamptz,
  unreported integer NOT NULL DEFAULT 0,
  last_failure_at timestamptz,
  failing boolean NOT NULL DEFAULT false
);

-- Down Migration

DROP TABLE failure_notice_state;
DROP TABLE failure_notice_outbox;
ALTER TABLE scheduler DROP COLUMN notify;
