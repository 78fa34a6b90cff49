-- Up Migration

-- At most 50 webhooks per owner (issue 27 review). Every run an owner's
-- scheduler ends writes one delivery per matching webhook, inside the
-- transaction that marks the run, and each becomes a POST: without a cap an
-- operator could slow the consumer and make the service flood a host with
-- thousands of calls per run. The API's check is this trigger, so concurrent
-- creates meet here: the advisory lock makes one owner's writers take turns,
-- and in READ COMMITTED the count after it sees the rows they committed.
CREATE FUNCTION webhook_per_owner_cap() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  taken integer;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('webhook_per_owner_cap'), NEW.user_id);
  SELECT count(*) INTO taken FROM webhook WHERE user_id = NEW.user_id AND id <> NEW.id;
  IF taken >= 50 THEN
    RAISE EXCEPTION 'user % already has % webhooks; 50 is the most one owner may have', NEW.user_id, taken
      USING ERRCODE = 'check_violation', CONSTRAINT = 'webhook_per_owner_max';
  END IF;
  RETURN NEW;
END
$$;

CREATE TRIGGER webhook_per_owner_cap
  BEFORE INSERT OR UPDATE OF user_id ON webhook
  FOR EACH ROW EXECUTE FUNCTION webhook_per_owner_cap();

-- Down Migration

DROP TRIGGER webhook_per_owner_cap ON webhook;
DROP FUNCTION webhook_per_owner_cap();
