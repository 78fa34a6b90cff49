-- Up Migration

-- is_known_time_zone(NULL) answered NULL (1796100000000); a NULL zone is no
-- known zone, as before that migration. The scheduler's trigger lets a NULL
-- zone through before asking, so only direct callers see the difference.
CREATE OR REPLACE FUNCTION is_known_time_zone(zone text) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
  IF zone IS NULL OR zone !~ '^[A-Za-z0-9_+/-]{1,64}$'
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
