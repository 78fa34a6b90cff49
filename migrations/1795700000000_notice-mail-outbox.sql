-- Up Migration

-- E-mail copies of scheduler notices (issue 26, item 4): one row per
-- notification whose scheduler says notify.email, written by the statement
-- that writes the notification, so a crash before sending loses nothing.
-- The sender locks a row, sends it, and marks it in one transaction: a crash
-- after the SMTP server accepted the message and before the mark commits
-- sends it again (at least once, never more often than such crashes).
CREATE TABLE notice_mail_outbox (
  notification_id bigint PRIMARY KEY REFERENCES notification (id) ON DELETE CASCADE,
  status text NOT NULL DEFAULT 'pending',
  attempts integer NOT NULL DEFAULT 0,
  -- NULL: due at once. Set after a failed attempt, by the sender's clock.
  next_attempt_at timestamptz,
  last_error text,
  sent_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT notice_mail_outbox_status_known
    CHECK (status IN ('pending', 'sent', 'skipped', 'abandoned'))
);
CREATE INDEX notice_mail_outbox_pending_idx
  ON notice_mail_outbox (notification_id) WHERE status = 'pending';

-- Down Migration

DROP TABLE notice_mail_outbox;
