-- Up Migration

-- Every scheduler write that sets a zone checked it against
-- pg_timezone_names, which reads every file of the zone database: 40-76 ms a
-- write, and a bulk insert of 100,000 zoned schedulers ran over ten minutes.
-- The names (lower case, as the check compares them) are kept in a table,
-- written here and brought up to date by every `npm run migrate` (after an
-- upgrade of PostgreSQL's zone data). A name the table lacks is still looked
-- up the slow way, so nothing PostgreSQL knows is refused.
CREATE TABLE known_time_zone (
  name text PRIMARY KEY CHECK (name = lower(name))
);

INSERT INTO known_time_zone (name)
  SELECT DISTINCT lower(name) FROM pg_timezone_names;

CREATE OR REPLACE FUNCTION is_known_time_zone(zone text) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
  IF zone IS NULL THEN
    RETURN NULL;
  END IF;
  IF zone !~ '^[A-Za-z0-9_+/-]{1,64}$'
     OR zone ~* '^(posix|right)/'
     OR lower(zone) IN ('factory', 'localtime', 'posixrules') THEN
    RETURN false;
  END IF;
  IF EXISTS (SELECT 1 FROM known_time_zone WHERE name = lower(zone)) THEN
    RETURN true;
  END IF;
  RETURN EXISTS (SELECT 1 FROM pg_timezone_names WHERE lower(name) = lower(zone));
END;
$$;

-- Down Migration

CREATE OR REPLACE FUNCTION is_known_time_zone(zone text) RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT zone ~ '^[A-Za-z0-9_+/-]{1,64}$'
     AND zone !~* '^(posix|right)/'
     AND lower(zone) NOT IN ('factory', 'localtime', 'posixrules')
     AND EXISTS (SELECT 1 FROM pg_timezone_names WHERE lower(name) = lower(zone))
$$;

DROP TABLE known_time_zone;
