-- Up Migration

-- STAY_ALIVE_MAX enforced where concurrent saves meet: the API checks the cap
-- first (with a detailed message), but two saves at once could both see room
-- for one more. The API's sessions carry the cap as the setting
-- task_scheduler.stay_alive_max; a session without it (migrations, psql) is
-- not limited. The advisory lock makes deciding writers take turns, and in
-- READ COMMITTED the count after the lock sees the rows they committed.
CREATE FUNCTION scheduler_stay_alive_cap() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  cap integer := nullif(current_setting('task_scheduler.stay_alive_max', true), '')::integer;
  taken integer;
BEGIN
  IF cap IS NULL THEN
    RETURN NEW;
  END IF;
  PERFORM pg_advisory_xact_lock(hashtext('scheduler_stay_alive_cap'));
  SELECT count(*) INTO taken FROM scheduler WHERE stay_alive AND id <> NEW.id;
  IF taken >= cap THEN
    RAISE EXCEPTION 'the installation already has % stay-alive schedulers; STAY_ALIVE_MAX allows %', taken, cap
      USING ERRCODE = 'check_violation', CONSTRAINT = 'scheduler_stay_alive_max';
  END IF;
  RETURN NEW;
END
$$;

CREATE TRIGGER scheduler_stay_alive_cap
  BEFORE INSERT OR UPDATE OF stay_alive ON scheduler
  FOR EACH ROW WHEN (NEW.stay_alive)
  EXECUTE FUNCTION scheduler_stay_alive_cap();

-- Down Migration

DROP TRIGGER scheduler_stay_alive_cap ON scheduler;
DROP FUNCTION scheduler_stay_alive_cap();
