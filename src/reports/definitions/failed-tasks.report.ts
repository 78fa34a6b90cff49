import {TASK_TYPES} from '../../queue/task-message';
import type {ReportDefinition, ReportRow} from '../report';
import {optionalEnumList, refuseUnknownParams} from '../params-check';
import {parsePeriod, Period} from '../report-period';
import {pagedRows, withBigintNumbers} from './paged-query';

export interface FailedTasksParams extends Period {
  type?: string[];
}

/** Tasks declared permanently failed in a period, with the reason. */
export const FailedTasksReport: ReportDefinition<FailedTasksParams> = {
  title: 'Failed tasks',
  description:
    'Tasks declared failed in a period (report_params: from, to, type[])',
  columns: [
    {key: 'id', header: 'Failed task', type: 'integer', width: 8},
    {key: 'failed_at', header: 'Failed at', type: 'datetime', width: 19},
    {key: 'type', header: 'Type', type: 'text', width: 8},
    {key: 'task_id', header: 'Task', type: 'integer', width: 6},
    {key: 'scheduler_id', header: 'Scheduler', type: 'integer', width: 8},
    {key: 'execution_id', header: 'Execution', type: 'integer', width: 8},
    {key: 'retry_count', header: 'Retries', type: 'integer', width: 6},
    {key: 'redrive_count', header: 'Re-drives', type: 'integer', width: 7},
    {key: 'failed_reason', header: 'Reason', type: 'text', width: 40},
  ],
  parseParams(raw, {timeZone, now}) {
    refuseUnknownParams(raw, ['from', 'to', 'type']);
    return {
      ...parsePeriod(raw, timeZone, now),
      type: optionalEnumList(raw, 'type', TASK_TYPES),
    };
  },
  rows(params, {db}) {
    const rows = pagedRows<ReportRow & {id: string}>(
      db,
      `SELECT id, failed_at, type, task_id, scheduler_id,
              execution_id, retry_count, redrive_count,
              failed_reason
         FROM failed_task
        WHERE id > $1 AND failed_at >= $3 AND failed_at < $4
          AND ($5::text[] IS NULL OR type = ANY($5))
        ORDER BY id
        LIMIT $2`,
      [params.from, params.to, params.type ?? null],
    );
    return withBigintNumbers(rows, ['id', 'execution_id']);
  },
};
