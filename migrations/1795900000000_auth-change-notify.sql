-- Up Migration

-- API processes keep the users behind bearer tokens for a few seconds
-- (AUTH_USER_CACHE_MS, issue 17). Every change that can take access away
-- tells them at once, whichever process or tool made it: a user's role,
-- activity, token cut-off or row changed or went, a token was signed out.
-- Statement triggers: one notification per statement, and PostgreSQL sends
-- it only when the transaction commits.
CREATE FUNCTION notify_auth_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('auth_changed', '');
  RETURN NULL;
END;
$$;

CREATE TRIGGER app_user_auth_changed
  AFTER UPDATE OR DELETE OR TRUNCATE ON app_user
  FOR EACH STATEMENT EXECUTE FUNCTION notify_auth_changed();

CREATE TRIGGER revoked_token_auth_changed
  AFTER INSERT ON revoked_token
  FOR EACH STATEMENT EXECUTE FUNCTION notify_auth_changed();

-- Down Migration

DROP TRIGGER revoked_token_auth_changed ON revoked_token;
DROP TRIGGER app_user_auth_changed ON app_user;
DROP FUNCTION notify_auth_changed();
