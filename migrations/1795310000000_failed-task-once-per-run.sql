-- Up Migration

-- A failed-queue message can arrive again after its row was stored: the ack
-- was lost with the connection, or the same run was parked twice. One row per
-- run: earlier duplicates (identical failures of the same run) are folded
-- into the first stored row before the index makes it a rule.
DELETE FROM failed_task AS later
 USING failed_task AS first
 WHERE later.execution_id IS NOT NULL
   AND later.execution_id = first.execution_id
   AND later.id > first.id;

CREATE UNIQUE INDEX failed_task_one_per_execution
  ON failed_task (execution_id)
  WHERE execution_id IS NOT NULL;

-- Down Migration

DROP INDEX failed_task_one_per_execution;
