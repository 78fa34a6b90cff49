-- Up Migration

-- Secrets an installation generates for itself when none is configured (the
-- JWT signing secret without JWT_SECRET), shared by every process through
-- the database. Never exposed by the API.
CREATE TABLE installation_secret (
  name text PRIMARY KEY,
  value text NOT NULL CHECK (length(value) >= 32),
  created_at timestamptz NOT NULL DEFAULT now()
);

-- Down Migration

DROP TABLE installation_secret;
