-- Up Migration

-- Which delivery of a run started last: the x-retry-count of its message
-- (0 for the first attempt). With it the consumer tells a duplicate message
-- (a publish whose confirm was lost and that the sweeper sent again) from the
-- retry it is waiting for, and does not run the same attempt twice.
ALTER TABLE scheduler_execution ADD COLUMN last_retry_count integer;

-- Down Migration

ALTER TABLE scheduler_execution DROP COLUMN last_retry_count;
