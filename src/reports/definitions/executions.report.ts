import type {ReportDefinition, ReportRow} from '../report';
import {
  optionalEnumList,
  optionalPositiveInteger,
  refuseUnknownParams,
} from '../params-check';
import {parsePeriod, Period} from '../report-period';
import {pagedRows, withBigintNumbers} from './paged-query';

export const EXECUTION_STATUSES = [
  'claimed',
  'published',
  'running',
  'retrying',
  'succeeded',
  'failed',
] as const;

export interface ExecutionsParams extends Period {
  status?: string[];
  scheduler_id?: number;
}

/** Every run claimed in a period: status, attempts and duration per run. */
export const ExecutionsReport: ReportDefinition<ExecutionsParams> = {
  title: 'Executions',
  description:
    'Runs claimed in a period (report_params: from, to, status[], scheduler_id)',
  columns: [
    {key: 'id', header: 'Execution', type: 'integer', width: 8},
    {key: 'scheduler_id', header: 'Scheduler', type: 'integer', width: 8},
    {key: 'scheduler', header: 'Description', type: 'text', width: 24},
    {key: 'execution_key', header: 'Execution key', type: 'text', width: 20},
    {key: 'status', header: 'Status', type: 'text', width: 9},
    {key: 'attempts', header: 'Attempts', type: 'integer', width: 7},
    {key: 'executed_at', header: 'Claimed at', type: 'datetime', width: 19},
    {key: 'started_at', header: 'Started at', type: 'datetime', width: 19},
    {key: 'duration_ms', header: 'Duration (ms)', type: 'integer', width: 10},
    {key: 'last_error', header: 'Last error', type: 'text', width: 24},
  ],
  parseParams(raw, {timeZone, now}) {
    refuseUnknownParams(raw, ['from', 'to', 'status', 'scheduler_id']);
    return {
      ...parsePeriod(raw, timeZone, now),
      status: optionalEnumList(raw, 'status', EXECUTION_STATUSES),
      scheduler_id: optionalPositiveInteger(raw, 'scheduler_id'),
    };
  },
  rows(params, {db}) {
    const rows = pagedRows<ReportRow & {id: string}>(
      db,
      `SELECT e.id, e.scheduler_id, s.description AS scheduler,
              e.execution_key, e.status, e.attempts, e.executed_at,
              e.started_at, e.duration_ms, e.last_error
         FROM scheduler_execution e JOIN scheduler s ON s.id = e.scheduler_id
        WHERE e.id > $1
          AND e.executed_at >= $3 AND e.executed_at < $4
          AND ($5::text[] IS NULL OR e.status = ANY($5))
          AND ($6::int IS NULL OR e.scheduler_id = $6)
        ORDER BY e.id
        LIMIT $2`,
      [
        params.from,
        params.to,
        params.status ?? null,
        params.scheduler_id ?? null,
      ],
    );
    return withBigintNumbers(rows, ['id']);
  },
};
