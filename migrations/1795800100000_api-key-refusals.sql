-- Up Migration

-- Refused API-key uses, counted per key prefix per minute: the first
-- refusal of a window writes an audit event, the rest are only counted
-- here (and reported on the next window's event), so a flood of bad keys
-- cannot fill the audit log.
CREATE TABLE api_key_refusal (
  key_prefix text PRIMARY KEY CHECK (length(key_prefix) <= 16),
  window_start timestamptz NOT NULL,
  -- Refusals in the current window, the audited one included.
  refused integer NOT NULL DEFAULT 1,
  -- Refusals of the window before, less its audited one: reported on the
  -- audit event that opens this window.
  previous_unaudited integer NOT NULL DEFAULT 0
);
CREATE INDEX api_key_refusal_window_idx ON api_key_refusal (window_start);

-- Down Migration

DROP TABLE api_key_refusal;
