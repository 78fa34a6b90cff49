import DataLoader from 'dataloader';
import type {Pool} from 'pg';
import {startInStatement} from '../consumer/run-ledger';
import type {PoolMode} from '../database/pg-pool';
import {MAX_REMINDER_MESSAGE_LENGTH} from '../validation/scheduler-rules';
import {TaskContext, TaskExecutor, TaskFailure} from './task-executor';

/** One reminder task of a batch: its statement's row of `tasks`. */
interface ReminderTask {
  executionId: number | null;
  reminderId: number;
  message: string | null;
  payload: object;
  startedAt: Date | null;
  finishedAt: Date | null;
  durationMs: number | null;
  retryCount: number;
  resent: number;
  /** The message's scheduler: a run of another is not started (see 'foreign'). */
  schedulerId: number;
}

interface ReminderOutcome {
  /** The run started here (or is not in the ledger): the notifications were written. */
  started: boolean;
  found: boolean;
  sent: number;
}

/** Tasks sent in one statement at most. */
export const MAX_REMINDER_BATCH = 64;

/**
 * Statements of one process in flight at once: while they run, the tasks
 * that become ready wait and join the next one (bigger batches under load,
 * none at all when idle). Two, so one statement held up by a row lock does
 * not hold every reminder of the process.
 */
const IN_FLIGHT = 2;

/**
 * Each task's reminder looked up, its run started and, when the reminder
 * exists, its notifications written and the run marked succeeded: all in
 * one statement and one commit for every task of the batch. Recipients are
 * the reminder's users plus the members of its groups, active ones, each
 * once; reminder ids are compared as bigint, so no id can fail the cast.
 */
const REMINDER_STATEMENT = `
WITH tasks AS (
  SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::jsonb[],
                       $5::timestamptz[], $6::timestamptz[], $7::int[], $8::int[],
                       $9::int[], $10::int[])
    WITH ORDINALITY AS t(execution_id, reminder_id, message, payload,
                         started_at, finished_at, duration_ms, retry_count,
                         resent, scheduler_id, n)
),
found AS (
  SELECT t.n, r.message, r.user_ids, r.group_ids
    FROM tasks t JOIN reminder r ON r.id = t.reminder_id
),
${startInStatement('tasks', 'EXISTS (SELECT 1 FROM found f WHERE f.n = t.n)')},
recipients AS (
  SELECT DISTINCT f.n, u.id AS user_id
    FROM found f JOIN go ON go.n = f.n
    CROSS JOIN LATERAL (
      SELECT id FROM app_user
       WHERE active AND id IN (SELECT jsonb_array_elements_text(f.user_ids)::int)
      UNION
      SELECT id FROM app_user
       WHERE active AND group_id IN (SELECT jsonb_array_elements_text(f.group_ids)::int)
    ) u
),
sent AS (
  INSERT INTO notification (user_id, title, body, payload)
  SELECT rc.user_id, 'Reminder', COALESCE(t.message, f.message), t.payload
    FROM recipients rc JOIN found f ON f.n = rc.n JOIN tasks t ON t.n = rc.n
  RETURNING 1
)
SELECT t.n::int,
       EXISTS (SELECT 1 FROM go WHERE go.n = t.n) AS started,
       EXISTS (SELECT 1 FROM found f WHERE f.n = t.n) AS found,
       (SELECT count(*) FROM recipients rc WHERE rc.n = t.n)::int AS sent
  FROM tasks t ORDER BY t.n`;

/**
 * Sends a reminder as web notifications: one per active recipient, the
 * reminder's users plus the members of its groups, each user once. The
 * params' `message` overrides the reminder's own. Bodies are plain text,
 * stored as given: whoever shows them must not render them as HTML.
 *
 * The task is one statement that also starts the run and marks its success
 * (`marksRunStart`): one round trip and one commit, the notifications and
 * the outcome together. Tasks of this process's consumers that are ready in
 * the same turn of the event loop share that statement and its commit; a
 * batch that fails is sent again task by task, so one task's error is never
 * another's.
 */
export class ReminderExecutor implements TaskExecutor {
  readonly marksRunStart = true;
  private readonly batches: DataLoader<ReminderTask, ReminderOutcome>;
  private inFlight = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    private readonly pool: Pool,
    /** Named statements are prepared once per session, never behind a transaction pooler. */
    private readonly poolMode: PoolMode = 'session',
  ) {
    this.batches = new DataLoader(tasks => this.runBatch(tasks), {
      cache: false,
      maxBatchSize: MAX_REMINDER_BATCH,
      // After this turn's I/O callbacks: every consumer's ready task joins.
      batchScheduleFn: send =>
        setImmediate(() =>
          this.inFlight < IN_FLIGHT ? send() : this.waiting.push(send),
        ),
    });
  }

  async execute(context: TaskContext): Promise<void> {
    const override = context.params.message;
    // Saving checks it too; this guards schedulers saved before that check.
    if (
      override !== undefined &&
      (typeof override !== 'string' ||
        override.length > MAX_REMINDER_MESSAGE_LENGTH)
    ) {
      throw new TaskFailure(
        `params.message must be plain text of at most ${MAX_REMINDER_MESSAGE_LENGTH} characters`,
      );
    }
    const {run} = context;
    const finish = run?.finish();
    const outcome = await this.batches.load({
      executionId: run?.executionId ?? null,
      reminderId: context.message.id,
      message: override ?? null,
      payload: {
        reminder_id: context.message.id,
        scheduler_id: context.message.scheduler_id,
        execution_key: context.executionKey ?? null,
      },
      startedAt: run?.startedAt ?? null,
      finishedAt: finish?.at ?? null,
      durationMs: finish ? Math.round(finish.durationMs) : null,
      retryCount: run?.retryCount ?? 0,
      resent: run?.resent ?? 0,
      schedulerId: context.message.scheduler_id,
    });
    run?.started(outcome.started);
    if (!outcome.started) return;
    if (!outcome.found) {
      throw new TaskFailure(`reminder ${context.message.id} does not exist`);
    }
    context.logger.info('Reminder sent', {recipients: outcome.sent});
  }

  private async runBatch(
    tasks: readonly ReminderTask[],
  ): Promise<Array<ReminderOutcome | Error>> {
    this.inFlight++;
    try {
      return await this.sendOrSplit(tasks);
    } finally {
      this.inFlight--;
      this.waiting.shift()?.();
    }
  }

  private async sendOrSplit(
    tasks: readonly ReminderTask[],
  ): Promise<Array<ReminderOutcome | Error>> {
    try {
      return await this.send(tasks);
    } catch (error) {
      if (tasks.length === 1) return [error as Error];
      // Nothing of the batch committed: each task on its own, its own error.
      return Promise.all(
        tasks.map(task =>
          this.send([task]).then(
            ([outcome]) => outcome,
            (taskError: Error) => taskError,
          ),
        ),
      );
    }
  }

  private async send(
    tasks: readonly ReminderTask[],
  ): Promise<ReminderOutcome[]> {
    const column = <K extends keyof ReminderTask>(key: K) =>
      tasks.map(task => task[key]);
    const {rows} = await this.pool.query<ReminderOutcome & {n: number}>({
      // Named: parsed and planned once per session, not once per batch.
      ...(this.poolMode === 'session' ? {name: 'reminder-tasks'} : {}),
      text: REMINDER_STATEMENT,
      values: [
        column('executionId'),
        column('reminderId'),
        column('message'),
        column('payload'),
        column('startedAt'),
        column('finishedAt'),
        column('durationMs'),
        column('retryCount'),
        column('resent'),
        column('schedulerId'),
      ],
    });
    return rows.map(({started, found, sent}) => ({started, found, sent}));
  }
}
