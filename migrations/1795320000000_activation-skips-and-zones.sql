-- Up Migration

-- When a scheduler last became eligible to fire: created, resumed, or given
-- another schedule, zone or date. The producer never fires a recurring
-- scheduler for a slot that began before it, so catch-up after downtime
-- cannot run it for minutes in which it did not exist, was paused or had
-- another expression. Rows that exist already take their last change.
ALTER TABLE scheduler
  ADD COLUMN activated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  -- Why the service switched the scheduler off (a one-time run missed), for the API.
  ADD COLUMN status_reason text;

ALTER TABLE scheduler DISABLE TRIGGER scheduler_set_updated_at;
UPDATE scheduler SET activated_at = updated_at;
ALTER TABLE scheduler ENABLE TRIGGER scheduler_set_updated_at;

-- A writer that sets activated_at itself is trusted (tests, restores);
-- everyone else gets the moment of the change.
CREATE FUNCTION scheduler_track_activation() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    NEW.activated_at := COALESCE(NEW.activated_at, clock_timestamp());
    RETURN NEW;
  END IF;
  IF NEW.activated_at IS NOT DISTINCT FROM OLD.activated_at AND (
       (NEW.status AND NOT OLD.status)
    OR (OLD.stay_alive AND NOT NEW.stay_alive)
    OR NEW.schedule IS DISTINCT FROM OLD.schedule
    OR NEW.timezone IS DISTINCT FROM OLD.timezone
    OR NEW.date_time IS DISTINCT FROM OLD.date_time
  ) THEN
    -- The moment of the change, not of the transaction's start: a long
    -- transaction crossing a minute boundary must not unpause earlier slots.
    NEW.activated_at := clock_timestamp();
  END IF;
  -- A reason explains the status it was given with; a new status drops it.
  IF NEW.status IS DISTINCT FROM OLD.status
     AND NEW.status_reason IS NOT DISTINCT FROM OLD.status_reason THEN
    NEW.status_reason := NULL;
  END IF;
  RETURN NEW;
END;
$$;

CREATE TRIGGER scheduler_track_activation
  BEFORE INSERT OR UPDATE ON scheduler
  FOR EACH ROW EXECUTE FUNCTION scheduler_track_activation();

-- A zone the producer can read: an IANA name PostgreSQL knows (any case, as
-- ICU reads it), not a POSIX rule string and none of the tz database's
-- internal names that ICU refuses.
CREATE FUNCTION is_known_time_zone(zone text) RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT zone ~ '^[A-Za-z0-9_+/-]{1,64}$'
     AND zone !~* '^(posix|right)/'
     AND lower(zone) NOT IN ('factory', 'localtime', 'posixrules')
     AND EXISTS (SELECT 1 FROM pg_timezone_names WHERE lower(name) = lower(zone))
$$;

-- A trigger rather than a CHECK: reading the zone list takes ~40 ms, so it
-- runs only when the zone itself is written, not on every update of the row.
CREATE FUNCTION scheduler_check_time_zone() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.timezone IS NULL
     OR (TG_OP = 'UPDATE' AND NEW.timezone IS NOT DISTINCT FROM OLD.timezone) THEN
    RETURN NEW;
  END IF;
  IF NOT is_known_time_zone(NEW.timezone) THEN
    RAISE EXCEPTION 'unknown time zone "%"', NEW.timezone
      USING ERRCODE = 'check_violation',
            CONSTRAINT = 'scheduler_timezone_known',
            HINT = 'use an IANA name such as Europe/Berlin';
  END IF;
  RETURN NEW;
END;
$$;

CREATE TRIGGER scheduler_timezone_known
  BEFORE INSERT OR UPDATE OF timezone ON scheduler
  FOR EACH ROW EXECUTE FUNCTION scheduler_check_time_zone();

-- A claim the sweeper found older than the catch-up window is not sent late:
-- it is marked skipped, with the reason.
ALTER TABLE scheduler_execution
  ADD COLUMN status_reason text,
  DROP CONSTRAINT scheduler_execution_status_known,
  ADD CONSTRAINT scheduler_execution_status_known CHECK (
    status IN ('claimed', 'published', 'running', 'retrying', 'succeeded',
               'failed', 'skipped')
  );

-- The sweeper looks only at claims nobody has taken; skipped runs, which
-- keep published_at empty for good, stay out of its index.
DROP INDEX scheduler_execution_unpublished_idx;
CREATE INDEX scheduler_execution_claimed_idx
  ON scheduler_execution (executed_at)
  WHERE status = 'claimed';

-- Down Migration

DROP INDEX scheduler_execution_claimed_idx;
CREATE INDEX scheduler_execution_unpublished_idx
  ON scheduler_execution (executed_at)
  WHERE published_at IS NULL;

ALTER TABLE scheduler_execution
  DROP CONSTRAINT scheduler_execution_status_known,
  ADD CONSTRAINT scheduler_execution_status_known CHECK (
    status IN ('claimed', 'published', 'running', 'retrying', 'succeeded', 'failed')
  ) NOT VALID,
  DROP COLUMN status_reason;
DROP TRIGGER scheduler_timezone_known ON scheduler;
DROP FUNCTION scheduler_check_time_zone();
DROP FUNCTION is_known_time_zone(text);
DROP TRIGGER scheduler_track_activation ON scheduler;
DROP FUNCTION scheduler_track_activation();
ALTER TABLE scheduler DROP COLUMN status_reason, DROP COLUMN activated_at;
