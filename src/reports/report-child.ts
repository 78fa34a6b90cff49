import {loadReportChildConfig} from '../config';
import {createPool, statementTimeout} from '../database/pg-pool';
import {createLogger} from '../logging/logger';
import {ReportMailer} from './delivery/report-mailer';
import type {ReportRequest} from './report';
import {runReport} from './report-runner';

/**
 * Entry point of the report child process. Protocol: the parent sends one
 * `{type: 'run', request}` message; the child answers `{type: 'completed',
 * summary}` and exits 0, or `{type: 'failed', error: {name, message, stack}}`
 * and exits 1. It runs the same report, renderer and delivery classes as
 * POST /reports/generate; a delivery failure fails the task (and so retries).
 */
type ParentMessage = {type: 'run'; request: ReportRequest};

function send(message: object): Promise<void> {
  return new Promise(resolve => process.send!(message, () => resolve()));
}

async function run(request: ReportRequest): Promise<Record<string, unknown>> {
  const config = loadReportChildConfig();
  // Log lines go to stdout, which the consumer captures and logs with the task.
  const logger = createLogger({level: 'info', service: 'report-child'});
  const db = createPool(
    {url: config.databaseUrl, poolMode: config.databasePoolMode},
    logger,
    2,
    statementTimeout(config.dbStatementTimeoutMs),
  );
  const mailer = new ReportMailer(config.reports, logger);
  try {
    const owner =
      request.scheduler_id === undefined
        ? []
        : (
            await db.query<{user_id: number | null}>(
              'SELECT user_id FROM scheduler WHERE id = $1',
              [request.scheduler_id],
            )
          ).rows;
    return await runReport(
      request,
      {
        db,
        mailer,
        logger,
        timeZone: config.timeZone,
        catchUpMinutes: config.catchUpMinutes,
        limits: config.reports,
      },
      {now: new Date(), userId: owner[0]?.user_id ?? null},
    );
  } finally {
    mailer.close();
    await db.end();
  }
}

let reported = false;

// The consumer died (the IPC channel closed before we reported): nobody waits
// for this result and the redelivered task renders the report again, so stop
// now rather than deliver it a second time.
process.once('disconnect', () => {
  if (!reported) process.exit(1);
});

process.once('message', (message: ParentMessage) => {
  run(message.request).then(
    async summary => {
      reported = true;
      await send({type: 'completed', summary});
      process.exit(0);
    },
    async (error: Error) => {
      reported = true;
      await send({
        type: 'failed',
        error: {name: error.name, message: error.message, stack: error.stack},
      });
      process.exit(1);
    },
  );
});
