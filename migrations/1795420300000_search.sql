-- Up Migration

-- GET /schedulers?q= and GET /failed-tasks?q= match text case-insensitively
-- in a generated column per row, served by a trigram index (pg_trgm, a
-- trusted extension), so a substring search stays fast at 100,000 rows.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

ALTER TABLE scheduler
  ADD COLUMN search_text text GENERATED ALWAYS AS (
    lower(coalesce(description, '') || ' ' || coalesce(params::text, ''))
  ) STORED;
CREATE INDEX scheduler_search_idx ON scheduler USING gin (search_text gin_trgm_ops);

ALTER TABLE failed_task
  ADD COLUMN search_text text GENERATED ALWAYS AS (
    lower(coalesce(params_scheduler, '') || ' ' || coalesce(failed_reason, ''))
  ) STORED;
CREATE INDEX failed_task_search_idx ON failed_task USING gin (search_text gin_trgm_ops);

-- Down Migration

DROP INDEX failed_task_search_idx;
ALTER TABLE failed_task DROP COLUMN search_text;
DROP INDEX scheduler_search_idx;
ALTER TABLE scheduler DROP COLUMN search_text;
