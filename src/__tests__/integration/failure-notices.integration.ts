import {expect} from '@loopback/testlab';
import type {Pool} from 'pg';
import {FailedTaskConsumer} from '../../consumer/failed-task-consumer';
import {createPool} from '../../database/pg-pool';
import {FailureNotices} from '../../notices/failure-notices';
import {AmqpConnection} from '../../queue/amqp-connection';
import {
  assertTopology,
  brokerTopology,
  FAILED_QUEUE,
} from '../../queue/topology';
import {LogCapture} from '../fixtures/log-capture';
import {
  resetBroker,
  TEST_AMQP_URL,
  TEST_RETRY,
  withChannel,
} from '../fixtures/test-broker';
import {eventually} from '../fixtures/test-consumer';
import {
  givenCatalog,
  sql,
  TEST_DATABASE_URL,
  truncateAll,
} from '../fixtures/test-database';
import {insertSchedulers} from '../fixtures/test-producer';

const MINUTE = 60_000;
const INTERVAL = 15 * MINUTE;
const at = (iso: string) => new Date(iso);
const plus = (start: Date, minutes: number) =>
  new Date(start.getTime() + minutes * MINUTE);

/** Issue 26, item 4: failure notices, with an injected clock. */
describe('failure notices', () => {
  let pool: Pool;
  let connection: AmqpConnection;
  let consumer: FailedTaskConsumer;
  let notices: FailureNotices;
  let owner: number;
  let schedulerId: number;
  let executionSeq = 0;
  const logs = new LogCapture();

  beforeEach(async () => {
    logs.clear();
    await truncateAll();
    await givenCatalog();
    await resetBroker();
    [{id: owner}] = await sql<{id: number}>(
      `INSERT INTO app_user (email, name, password_hash, role)
       VALUES ('owner@example.com', 'Owner', 'x', 'operator') RETURNING id`,
    );
    [schedulerId] = await insertSchedulers([{schedule: '* * * * *'}]);
    await sql(`UPDATE scheduler SET user_id = $1 WHERE id = $2`, [
      owner,
      schedulerId,
    ]);
    pool = createPool(TEST_DATABASE_URL, logs.logger);
    connection = new AmqpConnection(TEST_AMQP_URL, logs.logger, {
      onConnect: c =>
        assertTopology(() => c.createChannel(), brokerTopology(TEST_RETRY)),
    });
    await connection.start();
    consumer = new FailedTaskConsumer(connection, pool, logs.logger);
    await consumer.start();
    notices = new FailureNotices(pool, INTERVAL, logs.logger);
  });
  afterEach(async () => {
    await consumer.stop();
    await connection.stop();
    await pool.end();
  });

  /** A run of the scheduler, parked by the real failed-queue consumer. */
  async function park(failedAt: Date, executionId?: number): Promise<number> {
    let id = executionId;
    if (id === undefined) {
      executionSeq++;
      [{id}] = await sql<{id: number}>(
        `INSERT INTO scheduler_execution (scheduler_id, execution_key, slot, status, container_id)
         VALUES ($1, $2, $3, 'failed', 'test') RETURNING id::int`,
        [schedulerId, `cron-test-${executionSeq}`, failedAt],
      );
    }
    await withChannel(async channel => {
      channel.sendToQueue(
        FAILED_QUEUE,
        Buffer.from(
          JSON.stringify({
            type: 'report',
            id: 1,
            scheduler_id: schedulerId,
            params_scheduler: '{}',
            retry_count: 3,
            failed_at: failedAt.toISOString(),
            failed_reason: `boom ${'x'.repeat(1000)}`,
          }),
        ),
        {persistent: true, headers: {'x-execution-id': id}},
      );
      // Let the frame go out before the channel closes.
      await new Promise(resolve => setTimeout(resolve, 20));
    });
    await eventually(
      async () =>
        (await sql(`SELECT 1 FROM failed_task WHERE execution_id = $1`, [id]))
          .length === 1 || undefined,
    );
    return id!;
  }

  const ownerNotices = () =>
    sql<{title: string; body: string; payload: Record<string, unknown>}>(
      `SELECT title, body, payload FROM notification WHERE user_id = $1 ORDER BY id`,
      [owner],
    );

  it('gives one notice for ten failures in five minutes, then one digest with the count, then one recovery notice', async () => {
    const start = at('2026-11-24T10:00:00Z');
    for (let i = 0; i < 10; i++) {
      await park(plus(start, i / 2));
      await notices.dispatch(plus(start, i / 2));
    }
    let seen = await ownerNotices();
    expect(seen).to.have.length(1);
    expect(seen[0].payload).to.containDeep({
      kind: 'failure',
      scheduler_id: schedulerId,
      attempts: 4,
    });
    expect(seen[0].payload.failed_task_id).to.be.a.Number();
    expect((seen[0].payload.last_error as string).length).to.be.belowOrEqual(
      300,
    );
    expect(seen[0].body).to.match(/Re-drive it as failed task \d+/);
    // Before the interval ends: nothing more.
    await notices.dispatch(plus(start, 14));
    expect(await ownerNotices()).to.have.length(1);
    // After it: one digest with the nine others.
    await notices.dispatch(plus(start, 15));
    await notices.dispatch(plus(start, 16));
    seen = await ownerNotices();
    expect(seen).to.have.length(2);
    expect(seen[1].payload).to.containDeep({kind: 'digest', failed_runs: 9});
    // A success: one recovery notice, however often dispatched.
    await sql(
      `INSERT INTO scheduler_execution (scheduler_id, execution_key, slot, status, finished_at, container_id)
       VALUES ($1, 'cron-ok', now(), 'succeeded', now() + interval '1 minute', 'test')`,
      [schedulerId],
    );
    await sql(
      `UPDATE failure_notice_state SET last_failure_at = now() - interval '1 hour'`,
    );
    await notices.dispatch(plus(start, 17));
    await notices.dispatch(plus(start, 18));
    seen = await ownerNotices();
    expect(seen.map(n => n.payload.kind)).to.deepEqual([
      'failure',
      'digest',
      'recovery',
    ]);
  });

  it('delivers the notice once when the process dies between parking and notifying, and once for a run parked twice', async () => {
    const start = at('2026-11-24T10:00:00Z');
    const executionId = await park(start);
    // "Crash": nothing dispatched; the outbox row survived with the park.
    expect(
      await sql(`SELECT 1 FROM failure_notice_outbox WHERE handled_at IS NULL`),
    ).to.have.length(1);
    // The same run parked again (its ack was lost): stored and noticed once.
    await withChannel(async channel => {
      channel.sendToQueue(
        FAILED_QUEUE,
        Buffer.from(JSON.stringify({scheduler_id: schedulerId})),
        {persistent: true, headers: {'x-execution-id': executionId}},
      );
      await new Promise(resolve => setTimeout(resolve, 20));
    });
    await eventually(
      () => logs.find('PERMANENTLY FAILED TASK').length === 2 || undefined,
    );
    // A new process dispatches (twice, as two replicas might).
    const restarted = new FailureNotices(pool, INTERVAL, logs.logger);
    await Promise.all([
      restarted.dispatch(plus(start, 1)),
      notices.dispatch(plus(start, 1)),
    ]);
    await restarted.dispatch(plus(start, 2));
    expect(await ownerNotices()).to.have.length(1);
  });

  it('tells the group too when notify.group, and nobody when on_failure is false', async () => {
    const [{id: group}] = await sql<{id: number}>(
      `INSERT INTO user_group (name) VALUES ('ops') RETURNING id`,
    );
    const [{id: member}] = await sql<{id: number}>(
      `INSERT INTO app_user (email, name, password_hash, role, group_id)
       VALUES ('member@example.com', 'Member', 'x', 'viewer', $1) RETURNING id`,
      [group],
    );
    await sql(
      `UPDATE scheduler SET group_id = $1, notify = notify || '{"group": true}' WHERE id = $2`,
      [group, schedulerId],
    );
    await park(at('2026-11-24T10:00:00Z'));
    await notices.dispatch(at('2026-11-24T10:00:00Z'));
    expect(
      await sql(`SELECT 1 FROM notification WHERE user_id = $1`, [member]),
    ).to.have.length(1);
    await sql(
      `UPDATE scheduler SET notify = notify || '{"on_failure": false}' WHERE id = $1`,
      [schedulerId],
    );
    await park(at('2026-11-24T11:00:00Z'));
    await notices.dispatch(at('2026-11-24T11:00:00Z'));
    expect(await ownerNotices()).to.have.length(1);
  });
});
