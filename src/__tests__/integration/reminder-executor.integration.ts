import {expect} from '@loopback/testlab';
import type {Pool} from 'pg';
import {RunLedger} from '../../consumer/run-ledger';
import {createPool} from '../../database/pg-pool';
import {ReminderExecutor} from '../../executors/reminder.executor';
import {TaskContext, TaskFailure} from '../../executors/task-executor';
import {LogCapture} from '../fixtures/log-capture';
import {
  givenCatalog,
  sql,
  TEST_DATABASE_URL,
  truncateAll,
} from '../fixtures/test-database';

/** The reminder task against the real database, and what it costs in round trips. */
describe('ReminderExecutor', () => {
  let pool: Pool;
  let statements: number;
  let logs: LogCapture;
  let executor: ReminderExecutor;

  before(() => {
    pool = createPool(TEST_DATABASE_URL, new LogCapture().logger);
  });
  after(() => pool.end());
  beforeEach(async () => {
    await truncateAll();
    await givenCatalog();
    logs = new LogCapture();
    statements = 0;
    // The same pool, counting the statements the executor sends.
    const counting = {
      query: (...args: unknown[]) => {
        statements++;
        return (pool.query as (...a: unknown[]) => unknown)(...args);
      },
    } as unknown as Pool;
    executor = new ReminderExecutor(counting);
  });

  function givenContext(
    reminderId: number,
    params: Record<string, unknown> = {},
  ): TaskContext {
    return {
      message: {
        type: 'reminder',
        id: reminderId,
        scheduler_id: 7,
        params_scheduler: JSON.stringify(params),
      },
      params,
      executionKey: 'cron-2026-11-24-21-00',
      attempt: 1,
      logger: logs.logger,
      signal: new AbortController().signal,
    };
  }

  async function givenRecipients(): Promise<number[]> {
    const [group] = await sql<{id: number}>(
      `INSERT INTO user_group (name) VALUES ('ops') RETURNING id`,
    );
    const users = await sql<{id: number}>(
      `INSERT INTO app_user (email, name, password_hash, role, group_id, active) VALUES
         ('a@x.io', 'A', 'h', 'viewer', $1, true),
         ('b@x.io', 'B', 'h', 'viewer', NULL, true),
         ('c@x.io', 'C', 'h', 'viewer', $1, false)
       RETURNING id`,
      [group.id],
    );
    await sql(
      `UPDATE reminder SET message = 'Standup', user_ids = $1, group_ids = $2 WHERE id = 1`,
      [JSON.stringify([users[0].id, users[1].id]), JSON.stringify([group.id])],
    );
    return users.map(user => user.id);
  }

  it('notifies each active recipient once, in one statement', async () => {
    const [a, b] = await givenRecipients();
    await executor.execute(givenContext(1));
    const notes = await sql<{user_id: number; body: string; payload: object}>(
      `SELECT user_id, body, payload FROM notification ORDER BY user_id`,
    );
    expect(notes.map(n => n.user_id)).to.deepEqual([a, b]);
    expect(notes[0]).to.containDeep({
      body: 'Standup',
      payload: {
        reminder_id: 1,
        scheduler_id: 7,
        execution_key: 'cron-2026-11-24-21-00',
      },
    });
    expect(statements).to.equal(1);
    expect(logs.find('Reminder sent')[0]).to.containDeep({recipients: 2});
  });

  it("sends the params' message instead of the reminder's own", async () => {
    await givenRecipients();
    await executor.execute(givenContext(1, {message: 'Moved to 10:30'}));
    const notes = await sql<{body: string}>(`SELECT body FROM notification`);
    expect(notes.map(n => n.body)).to.deepEqual([
      'Moved to 10:30',
      'Moved to 10:30',
    ]);
  });

  it('fails a reminder that does not exist, sending nothing', async () => {
    await givenRecipients();
    await expect(executor.execute(givenContext(999))).to.be.rejectedWith(
      TaskFailure,
      {message: 'reminder 999 does not exist'},
    );
    expect(await sql(`SELECT id FROM notification`)).to.have.length(0);
  });

  it('fails a params message that is not plain text before asking the database', async () => {
    await givenRecipients();
    await expect(
      executor.execute(givenContext(1, {message: {html: '<b>x</b>'}})),
    ).to.be.rejectedWith(TaskFailure, {message: /params.message must be/});
    expect(statements).to.equal(0);
    expect(await sql(`SELECT id FROM notification`)).to.have.length(0);
  });

  it('succeeds with no recipients, sending nothing', async () => {
    await executor.execute(givenContext(2));
    expect(await sql(`SELECT id FROM notification`)).to.have.length(0);
    expect(logs.find('Reminder sent')[0]).to.containDeep({recipients: 0});
  });

  describe('with the run ledger', () => {
    async function givenRunningExecution(): Promise<number> {
      const [scheduler] = await sql<{id: number}>(
        `INSERT INTO scheduler (description, schedule, reminder_id)
         VALUES ('standup', '* * * * *', 1) RETURNING id`,
      );
      const [run] = await sql<{id: string}>(
        `INSERT INTO scheduler_execution
           (scheduler_id, execution_key, container_id, status, published_at, started_at)
         VALUES ($1, 'cron-2026-11-24-21-00', 'test', 'running', now(), now())
         RETURNING id`,
        [scheduler.id],
      );
      return Number(run.id);
    }

    function withSuccessMark(
      context: TaskContext,
      executionId: number,
    ): TaskContext {
      const ledger = new RunLedger(pool);
      const at = new Date('2026-11-24T21:00:01.500Z');
      return {
        ...context,
        successMark: (first, condition) =>
          ledger.successMark(executionId, at, 42.4, first, condition),
      };
    }

    it('commits the notifications and the success mark in the same statement', async () => {
      await givenRecipients();
      const executionId = await givenRunningExecution();
      await executor.execute(withSuccessMark(givenContext(1), executionId));
      expect(statements).to.equal(1);
      const [run] = await sql<{status: string; duration_ms: number}>(
        `SELECT status, duration_ms, finished_at FROM scheduler_execution WHERE id = $1`,
        [executionId],
      );
      expect(run).to.containDeep({
        status: 'succeeded',
        duration_ms: 42,
        finished_at: new Date('2026-11-24T21:00:01.500Z'),
      });
      expect(await sql(`SELECT id FROM notification`)).to.have.length(2);
    });

    it('leaves the run as it was when the reminder does not exist', async () => {
      const executionId = await givenRunningExecution();
      await expect(
        executor.execute(withSuccessMark(givenContext(999), executionId)),
      ).to.be.rejectedWith(TaskFailure);
      const [run] = await sql<{status: string}>(
        `SELECT status, finished_at FROM scheduler_execution WHERE id = $1`,
        [executionId],
      );
      expect(run).to.containDeep({status: 'running', finished_at: null});
    });
  });
});
