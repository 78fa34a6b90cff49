-- Up Migration

-- Deleting a scheduler deletes its runs (ON DELETE CASCADE), and the cascade
-- locks them in the order it finds them: the table's (a run's row moves on
-- an update) or an index's (a backfilled run has an earlier key but a higher
-- id). The producer marking runs published and a consumer starting a batch
-- lock runs in ascending id order (issue 17): the orders disagreed and
-- PostgreSQL aborted one statement as a deadlock. The scheduler's runs are
-- now locked in id order first, so the cascade finds them already held.
CREATE FUNCTION lock_scheduler_runs_in_id_order() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM scheduler_execution
    WHERE scheduler_id = OLD.id
    ORDER BY id
      FOR UPDATE;
  RETURN OLD;
END;
$$;

CREATE TRIGGER scheduler_delete_locks_runs_in_id_order
  BEFORE DELETE ON scheduler
  FOR EACH ROW EXECUTE FUNCTION lock_scheduler_runs_in_id_order();

-- Down Migration

DROP TRIGGER scheduler_delete_locks_runs_in_id_order ON scheduler;
DROP FUNCTION lock_scheduler_runs_in_id_order();
