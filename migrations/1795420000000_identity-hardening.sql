-- Up Migration

-- Tokens issued before this moment are refused (compared with the token's
-- iat). The database moves it whenever a password, role or active flag
-- changes, whatever path made the change; logout-all moves it directly.
ALTER TABLE app_user
  ADD COLUMN tokens_valid_after timestamptz NOT NULL DEFAULT '-infinity';

CREATE FUNCTION app_user_revoke_tokens() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.password_hash IS DISTINCT FROM OLD.password_hash
     OR NEW.role IS DISTINCT FROM OLD.role
     OR NEW.active IS DISTINCT FROM OLD.active THEN
    NEW.tokens_valid_after := clock_timestamp();
  END IF;
  RETURN NEW;
END
$$;

CREATE TRIGGER app_user_revoke_tokens
  BEFORE UPDATE ON app_user
  FOR EACH ROW EXECUTE FUNCTION app_user_revoke_tokens();

-- Single tokens revoked by POST /auth/logout, until they would expire anyway.
CREATE TABLE revoked_token (
  jti uuid PRIMARY KEY,
  user_id integer REFERENCES app_user (id) ON DELETE CASCADE,
  expires_at timestamptz NOT NULL
);
CREATE INDEX revoked_token_expires_idx ON revoked_token (expires_at);

-- Failed sign-ins per account and per client address, shared by every API
-- replica. `key` is 'account:<e-mail>' or 'address:<ip>'.
CREATE TABLE login_throttle (
  key text PRIMARY KEY CHECK (length(key) <= 400),
  failures integer NOT NULL DEFAULT 0,
  locked_until timestamptz,
  last_failure_at timestamptz NOT NULL
);
CREATE INDEX login_throttle_last_failure_idx ON login_throttle (last_failure_at);

-- Down Migration

DROP TABLE login_throttle;
DROP TABLE revoked_token;
DROP TRIGGER app_user_revoke_tokens ON app_user;
DROP FUNCTION app_user_revoke_tokens();
ALTER TABLE app_user DROP COLUMN tokens_valid_after;
