-- Up Migration

-- calendar_ids is a plain JSON list, so no foreign key guards it. The API's
-- two checks (the scheduler's ids exist; no scheduler names a calendar being
-- deleted) each read before the other's write committed: a scheduler saved
-- while its calendar was deleted kept a dangling id, which the producer
-- ignores, so an "allowed" restriction silently vanished (review of issue
-- 26). These triggers make the pair atomic: saving a scheduler takes a KEY
-- SHARE lock on the calendars it names, which a DELETE waits for; the delete
-- trigger then sees the committed scheduler, and a save after a delete finds
-- the calendar gone.
CREATE FUNCTION scheduler_check_calendar_ids() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  wanted integer[];
  found integer;
BEGIN
  IF TG_OP = 'UPDATE' AND NEW.calendar_ids IS NOT DISTINCT FROM OLD.calendar_ids THEN
    RETURN NEW;
  END IF;
  SELECT coalesce(array_agg(DISTINCT value::integer), '{}')
    INTO wanted
    FROM jsonb_array_elements_text(NEW.calendar_ids);
  IF cardinality(wanted) = 0 THEN
    RETURN NEW;
  END IF;
  SELECT count(*) INTO found
    FROM (SELECT id FROM calendar WHERE id = ANY (wanted) FOR KEY SHARE) AS named;
  IF found < cardinality(wanted) THEN
    RAISE EXCEPTION 'calendar_ids names a calendar that does not exist'
      USING ERRCODE = 'check_violation',
            CONSTRAINT = 'scheduler_calendar_ids_exist';
  END IF;
  RETURN NEW;
END;
$$;

CREATE TRIGGER scheduler_calendar_ids_exist
  BEFORE INSERT OR UPDATE OF calendar_ids ON scheduler
  FOR EACH ROW EXECUTE FUNCTION scheduler_check_calendar_ids();

CREATE FUNCTION calendar_check_unused() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM scheduler
              WHERE calendar_ids @> jsonb_build_array(OLD.id)) THEN
    RAISE EXCEPTION 'calendar % is still named by a scheduler', OLD.id
      USING ERRCODE = 'foreign_key_violation',
            CONSTRAINT = 'calendar_in_use';
  END IF;
  RETURN OLD;
END;
$$;

CREATE TRIGGER calendar_in_use
  BEFORE DELETE ON calendar
  FOR EACH ROW EXECUTE FUNCTION calendar_check_unused();

-- Down Migration

DROP TRIGGER calendar_in_use ON calendar;
DROP FUNCTION calendar_check_unused();
DROP TRIGGER scheduler_calendar_ids_exist ON scheduler;
DROP FUNCTION scheduler_check_calendar_ids();
