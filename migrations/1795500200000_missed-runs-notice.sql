-- Up Migration

-- One missed-runs notice per scheduler per outage: the first missed slot
-- keys it, so producers that plan the same outage tell it once.
CREATE TABLE missed_runs_notice (
  scheduler_id integer NOT NULL REFERENCES scheduler (id) ON DELETE CASCADE,
  first_slot timestamptz NOT NULL,
  last_slot timestamptz NOT NULL,
  missed integer NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (scheduler_id, first_slot)
);

-- Down Migration

DROP TABLE missed_runs_notice;
