import {randomUUID} from 'node:crypto';
import type {Pool} from 'pg';
import {markPublished} from '../database/mark-published';
import type {TaskMessage} from '../queue/task-message';
import type {TaskPublisher} from '../queue/task-publisher';
import {assertQueuedReportRoom} from './queued-report-limit';
import {ReportInputError, ReportRequest} from './report';

export interface QueuedReport {
  /** queued: the broker confirmed the task; pending: the sweeper will publish it. */
  status: 'queued' | 'pending';
  execution_id: number;
  execution_key: string;
  scheduler_id: number;
}

/**
 * Queues a report as a `report` task. The run is recorded like any other:
 * as a one-time scheduler that is already disabled (so the producer never
 * fires it) with one execution row, so the consumer's run ledger, retries,
 * failed-task record and GET /schedulers/{id}/executions all apply.
 */
export async function queueReport(
  db: Pool,
  publisher: TaskPublisher,
  request: ReportRequest,
  context: {
    userId: number;
    now: Date;
    containerId: string;
    /** REPORT_MAX_QUEUED_PER_USER, checked in the queuing transaction. */
    maxQueuedPerUser: number;
  },
): Promise<QueuedReport> {
  const {rows: reports} = await db.query<{id: number}>(
    'SELECT id FROM report WHERE controller = $1 ORDER BY id LIMIT 1',
    [request.controller],
  );
  if (reports.length === 0) {
    throw new ReportInputError(
      `No report in the catalog uses controller "${request.controller}": create one (POST /reports) to queue it, or run it with delivery.instant true`,
      [{path: '/controller', code: 'catalog', message: 'not in the catalog'}],
    );
  }
  const reportId = reports[0].id;
  const executionKey = `manual-${randomUUID()}`;
  const client = await db.connect();
  let schedulerId: number;
  let executionId: number;
  let message: TaskMessage;
  try {
    await client.query('BEGIN');
    await assertQueuedReportRoom(
      client,
      context.userId,
      context.maxQueuedPerUser,
    );
    const {rows: schedulers} = await client.query<{id: number}>(
      `INSERT INTO scheduler (description, date_time, status, report_id, params, user_id)
       VALUES ($1, $2, false, $3, $4, $5) RETURNING id`,
      [
        `On-demand report ${request.controller}`,
        context.now,
        reportId,
        request,
        context.userId,
      ],
    );
    schedulerId = schedulers[0].id;
    message = {
      type: 'report',
      id: reportId,
      scheduler_id: schedulerId,
      params_scheduler: JSON.stringify(request),
    };
    // The message goes with the run (outbox): if no confirm comes, the
    // producer's sweeper publishes exactly this.
    const {rows: executions} = await client.query<{id: string}>(
      `INSERT INTO scheduler_execution
         (scheduler_id, execution_key, slot, container_id, payload, trigger)
       VALUES ($1, $2, $3, $4, $5, 'manual') RETURNING id`,
      [schedulerId, executionKey, context.now, context.containerId, message],
    );
    executionId = Number(executions[0].id);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
  const confirmed = await publisher.publish([
    {executionId, executionKey, message},
  ]);
  // No confirm: the broker may hold it or not. Deleting the run would leave
  // a message with no ledger row, and the user's retry would run it twice.
  if (confirmed.size > 0) await markPublished(db, confirmed);
  return {
    status: confirmed.has(executionId) ? 'queued' : 'pending',
    execution_id: executionId,
    execution_key: executionKey,
    scheduler_id: schedulerId,
  };
}
