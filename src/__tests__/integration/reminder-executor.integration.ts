import {expect} from '@loopback/testlab';
import type {Pool} from 'pg';
import {createPool} from '../../database/pg-pool';
import {
  MAX_REMINDER_BATCH,
  ReminderExecutor,
} from '../../executors/reminder.executor';
import {TaskContext, TaskFailure} from '../../executors/task-executor';
import {
  givenABusyLedger,
  lockHolder,
  lockRun,
  untilSomeoneWaitsOnALock,
} from '../fixtures/lock-waits';
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

  it('sends the tasks ready in the same turn in one statement, each with its own outcome', async () => {
    const [a, b] = await givenRecipients();
    const [onlyB] = await sql<{id: number}>(
      `INSERT INTO reminder (message, user_ids) VALUES ('Only B', $1) RETURNING id`,
      [JSON.stringify([b])],
    );
    const results = await Promise.allSettled([
      executor.execute(givenContext(1)),
      executor.execute(givenContext(onlyB.id)),
      executor.execute(givenContext(999)),
    ]);
    expect(statements).to.equal(1);
    expect(results.map(r => r.status)).to.eql([
      'fulfilled',
      'fulfilled',
      'rejected',
    ]);
    const notes = await sql<{user_id: number; body: string}>(
      `SELECT user_id, body FROM notification ORDER BY body, user_id`,
    );
    expect(notes).to.eql([
      {user_id: b, body: 'Only B'},
      {user_id: a, body: 'Standup'},
      {user_id: b, body: 'Standup'},
    ]);
  });

  it("sends a failing batch again task by task: one task's database error is not the others'", async () => {
    await givenRecipients();
    // PostgreSQL refuses text with a NUL character: the whole statement fails.
    const results = await Promise.allSettled([
      executor.execute(givenContext(1, {message: 'ok'})),
      executor.execute(givenContext(1, {message: 'bad \u0000 text'})),
      executor.execute(givenContext(1, {message: 'fine'})),
    ]);
    expect(results.map(r => r.status)).to.eql([
      'fulfilled',
      'rejected',
      'fulfilled',
    ]);
    expect(String((results[1] as PromiseRejectedResult).reason)).to.match(
      /0x00|\\u0000/,
    );
    // One batch, then one statement per task.
    expect(statements).to.equal(4);
    const bodies = await sql<{body: string}>(
      `SELECT DISTINCT body FROM notification ORDER BY body`,
    );
    expect(bodies.map(n => n.body)).to.eql(['fine', 'ok']);
  });

  it('keeps hostile recipient lists and ids to their own task: the others of the batch are sent', async () => {
    const [a, b] = await givenRecipients();
    // Written straight in the database, past the API's checks (arrays: a constraint).
    const hostile = await sql<{id: number}>(
      `INSERT INTO reminder (message, user_ids, group_ids) VALUES
         ('fraction', '[1.5]', '[]'),
         ('object inside', '[{"a": 1}]', '[]'),
         ('too big', '[3000000000]', '[]'),
         ('text', '["x"]', '[]'),
         ('group too big', '[]', '[1e30]')
       RETURNING id`,
    );
    const [nulls] = await sql<{id: number}>(
      `INSERT INTO reminder (message, user_ids, group_ids)
       VALUES ('nulls', $1, '[null]') RETURNING id`,
      [JSON.stringify([null, b])],
    );
    const results = await Promise.allSettled([
      executor.execute(givenContext(1)),
      ...hostile.map(r => executor.execute(givenContext(r.id))),
      executor.execute(givenContext(nulls.id)),
      // Ids no reminder has: beyond int4, and beyond what bigint holds.
      executor.execute(givenContext(3_000_000_000)),
      executor.execute(givenContext(1e20)),
    ]);
    expect(results.map(r => r.status)).to.eql([
      'fulfilled',
      ...hostile.map(() => 'rejected'),
      'fulfilled',
      'rejected',
      'rejected',
    ]);
    expect(
      String((results[hostile.length + 2] as PromiseRejectedResult).reason),
    ).to.match(/reminder 3000000000 does not exist/);
    const notes = await sql<{user_id: number; body: string}>(
      `SELECT user_id, body FROM notification ORDER BY body, user_id`,
    );
    expect(notes).to.containDeep([
      {user_id: a, body: 'Standup'},
      {user_id: b, body: 'Standup'},
      {user_id: b, body: 'nulls'},
    ]);
    expect(notes).to.have.length(3);
  });

  it('sends more tasks than a batch holds in several statements, each task once', async () => {
    await givenRecipients();
    const count = MAX_REMINDER_BATCH * 2 + 10;
    const results = await Promise.allSettled(
      Array.from({length: count}, (_, i) =>
        executor.execute(givenContext(1, {message: `m${i}`})),
      ),
    );
    expect(results.filter(r => r.status === 'fulfilled')).to.have.length(count);
    expect(statements).to.equal(3);
    const [{bodies, rows}] = await sql<{bodies: number; rows: number}>(
      `SELECT count(DISTINCT body)::int AS bodies, count(*)::int AS rows FROM notification`,
    );
    expect({bodies, rows}).to.eql({bodies: count, rows: count * 2});
  });

  describe('with the run ledger', () => {
    /** Each run's scheduler: a delivery names the scheduler of its run. */
    const schedulerOfRun = new Map<number, number>();

    async function givenExecution(
      status = 'published',
      lastRetryCount: number | null = null,
    ): Promise<number> {
      const [scheduler] = await sql<{id: number}>(
        `INSERT INTO scheduler (description, schedule, reminder_id)
         VALUES ('standup', '* * * * *', 1) RETURNING id`,
      );
      const [run] = await sql<{id: string}>(
        `INSERT INTO scheduler_execution
           (scheduler_id, execution_key, container_id, status, published_at, last_retry_count)
         VALUES ($1, 'cron-2026-11-24-21-00', 'test', $2, now(), $3)
         RETURNING id`,
        [scheduler.id, status, lastRetryCount],
      );
      schedulerOfRun.set(Number(run.id), scheduler.id);
      return Number(run.id);
    }

    const startedAt = new Date('2026-11-24T21:00:01.000Z');
    const finishedAt = new Date('2026-11-24T21:00:01.500Z');

    /** The context a consumer gives for a run in the ledger; `said` collects what the executor reported. */
    function inLedger(
      context: TaskContext,
      executionId: number,
      said: boolean[],
      retryCount = 0,
    ): TaskContext {
      return {
        ...context,
        message: {
          ...context.message,
          scheduler_id: schedulerOfRun.get(executionId) ?? 7,
        },
        run: {
          executionId,
          retryCount,
          resent: 0,
          startedAt,
          finish: () => ({at: finishedAt, durationMs: 42.4}),
          started: value => said.push(value),
        },
      };
    }

    const runRow = async (id: number) =>
      (
        await sql(
          `SELECT status, attempts, started_at, finished_at, duration_ms, last_retry_count
             FROM scheduler_execution WHERE id = $1`,
          [id],
        )
      )[0];

    it('starts the run, writes the notifications and marks success in one statement', async () => {
      await givenRecipients();
      const executionId = await givenExecution();
      const said: boolean[] = [];
      await executor.execute(inLedger(givenContext(1), executionId, said));
      expect(statements).to.equal(1);
      expect(said).to.eql([true]);
      expect(await runRow(executionId)).to.eql({
        status: 'succeeded',
        attempts: 1,
        started_at: startedAt,
        finished_at: finishedAt,
        duration_ms: 42,
        last_retry_count: 0,
      });
      expect(await sql(`SELECT id FROM notification`)).to.have.length(2);
    });

    it('leaves the run started, not finished, when the reminder does not exist', async () => {
      const executionId = await givenExecution();
      const said: boolean[] = [];
      await expect(
        executor.execute(inLedger(givenContext(999), executionId, said)),
      ).to.be.rejectedWith(TaskFailure);
      expect(said).to.eql([true]);
      expect(await runRow(executionId)).to.containDeep({
        status: 'running',
        attempts: 1,
        started_at: startedAt,
        finished_at: null,
      });
    });

    it('starts nothing and sends nothing for a run that already succeeded', async () => {
      await givenRecipients();
      const executionId = await givenExecution('succeeded');
      const said: boolean[] = [];
      await executor.execute(inLedger(givenContext(1), executionId, said));
      expect(said).to.eql([false]);
      expect(await runRow(executionId)).to.containDeep({
        status: 'succeeded',
        attempts: 0,
      });
      expect(await sql(`SELECT id FROM notification`)).to.have.length(0);
      expect(logs.find('Reminder sent')).to.have.length(0);
    });

    it('refuses a delivery of an attempt whose retry is pending, and runs the retry', async () => {
      await givenRecipients();
      const executionId = await givenExecution('retrying', 0);
      const said: boolean[] = [];
      await executor.execute(inLedger(givenContext(1), executionId, said, 0));
      expect(await sql(`SELECT id FROM notification`)).to.have.length(0);
      await executor.execute(inLedger(givenContext(1), executionId, said, 1));
      expect(said).to.eql([false, true]);
      expect(await runRow(executionId)).to.containDeep({
        status: 'succeeded',
        last_retry_count: 1,
      });
      expect(await sql(`SELECT id FROM notification`)).to.have.length(2);
    });

    it('notifies once when two deliveries of the same run share a batch', async () => {
      await givenRecipients();
      const executionId = await givenExecution();
      const said: boolean[] = [];
      await Promise.all([
        executor.execute(inLedger(givenContext(1), executionId, said)),
        executor.execute(inLedger(givenContext(1), executionId, said)),
      ]);
      expect(statements).to.equal(1);
      expect(said.sort()).to.eql([false, true]);
      expect(await runRow(executionId)).to.containDeep({
        status: 'succeeded',
        attempts: 1,
      });
      expect(await sql(`SELECT id FROM notification`)).to.have.length(2);
    });

    it('notifies once when two consumers run the same run at once', async () => {
      await givenRecipients();
      const executionId = await givenExecution();
      const other = new ReminderExecutor(pool);
      const said: boolean[] = [];
      await Promise.all([
        executor.execute(inLedger(givenContext(1), executionId, said)),
        other.execute(inLedger(givenContext(1), executionId, said)),
      ]);
      expect(said.sort()).to.eql([false, true]);
      expect(await sql(`SELECT id FROM notification`)).to.have.length(2);
    });

    it('locks the runs of a batch in id order, so the producer marking them published never deadlocks with it', async () => {
      await givenRecipients();
      const ids: number[] = [];
      for (let i = 0; i < 16; i++) ids.push(await givenExecution());
      await givenABusyLedger(1);
      // The producer's marking (in id order) holds the lowest run.
      const producer = await lockHolder();
      const said: boolean[] = [];
      try {
        await producer.query('BEGIN');
        await lockRun(producer, ids[0]);
        // Deliveries arrive out of id order and share one statement.
        const running = Promise.all(
          [...ids]
            .reverse()
            .map(id => executor.execute(inLedger(givenContext(1), id, said))),
        );
        running.catch(() => undefined); // awaited below
        await untilSomeoneWaitsOnALock();
        // Free only if the batch waits on the lowest run holding none of the others.
        await producer.query(
          `SELECT id FROM scheduler_execution WHERE id = ANY($1) FOR UPDATE NOWAIT`,
          [ids.slice(1)],
        );
        await producer.query('COMMIT');
        await running;
      } finally {
        await producer.end();
      }
      expect(statements).to.equal(1);
      expect(said).to.eql(ids.map(() => true));
      const [row] = await sql<{succeeded: number}>(
        `SELECT count(*)::int AS succeeded FROM scheduler_execution
          WHERE id = ANY($1) AND status = 'succeeded'`,
        [ids],
      );
      expect(row.succeeded).to.equal(ids.length);
    });

    it('runs a task whose ledger row alone is gone, recording nothing', async () => {
      await givenRecipients();
      const id = await givenExecution();
      await sql(`DELETE FROM scheduler_execution WHERE id = $1`, [id]);
      const said: boolean[] = [];
      await executor.execute(inLedger(givenContext(1), id, said));
      expect(said).to.eql([true]);
      expect(await sql(`SELECT id FROM notification`)).to.have.length(2);
    });

    it('starts nothing and sends nothing for a run whose scheduler was deleted with its row', async () => {
      await givenRecipients();
      const id = await givenExecution();
      await sql(`DELETE FROM scheduler WHERE id = $1`, [
        schedulerOfRun.get(id),
      ]);
      const said: boolean[] = [];
      await executor.execute(inLedger(givenContext(1), id, said));
      expect(said).to.eql([false]);
      expect(await sql(`SELECT id FROM notification`)).to.deepEqual([]);
    });
  });
});
