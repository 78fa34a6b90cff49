import {expect} from '@loopback/testlab';
import amqp from 'amqplib';
import type {Pool} from 'pg';
import {FailedTaskConsumer} from '../../consumer/failed-task-consumer';
import {createPool} from '../../database/pg-pool';
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
import {sql, TEST_DATABASE_URL, truncateAll} from '../fixtures/test-database';

/**
 * Review findings: bodies a hostile or broken publisher can put on the
 * failed queue. Each must be stored (or at least logged) and acknowledged:
 * one left unacked held a prefetch slot for good (ten `null` bodies stalled
 * the queue, and real failures never reached failed_task), and one whose
 * reason could not be turned into text was requeued every second for ever.
 */
// A body of 1 MB and one nested 50,000 deep: slow on a busy CI machine.
describe('failed-queue consumer: hostile bodies', function (this: Mocha.Suite) {
  this.timeout(90_000);
  let pool: Pool;
  let connection: AmqpConnection;
  let consumer: FailedTaskConsumer;
  const logs = new LogCapture();

  beforeEach(async () => {
    logs.clear();
    await truncateAll();
    await resetBroker();
    pool = createPool(TEST_DATABASE_URL, logs.logger);
    connection = new AmqpConnection(TEST_AMQP_URL, logs.logger, {
      onConnect: c =>
        assertTopology(() => c.createChannel(), brokerTopology(TEST_RETRY)),
    });
    await connection.start();
    consumer = new FailedTaskConsumer(connection, pool, logs.logger);
  });
  afterEach(async () => {
    await consumer.stop();
    await connection.stop();
    await pool.end().catch(() => undefined);
  });

  /** Publishes on a confirm channel: every body is on the broker when it resolves. */
  const publishRaw = async (bodies: Buffer[], executionId?: number) => {
    const publisher = await amqp.connect(TEST_AMQP_URL);
    try {
      const channel = await publisher.createConfirmChannel();
      for (const body of bodies) {
        channel.sendToQueue(FAILED_QUEUE, body, {
          persistent: true,
          headers: executionId ? {'x-execution-id': executionId} : {},
        });
      }
      await channel.waitForConfirms();
    } finally {
      await publisher.close();
    }
  };
  const json = (value: unknown) => Buffer.from(JSON.stringify(value));

  /** Messages in the failed queue, ready and unacknowledged. */
  const queued = () =>
    withChannel(async channel => {
      const {messageCount} = await channel.checkQueue(FAILED_QUEUE);
      return messageCount;
    });

  it('acknowledges ten `null` bodies and still stores the real failure after them', async () => {
    await publishRaw(Array.from({length: 10}, () => Buffer.from('null')));
    await publishRaw([
      json({
        type: 'worker',
        id: 1,
        scheduler_id: 5,
        params_scheduler: '{}',
        failed_reason: 'exited with code 3',
        retry_count: 3,
      }),
    ]);
    await consumer.start();
    const real = await eventually(async () => {
      const rows = await sql<{failed_reason: string}>(
        `SELECT failed_reason FROM failed_task WHERE scheduler_id = 5`,
      );
      return rows[0];
    }, 30_000);
    expect(real.failed_reason).to.equal('exited with code 3');
    await eventually(async () => (await queued()) === 0 || undefined);
    const unreadable = await sql<{payload: {raw: string}}>(
      `SELECT payload FROM failed_task WHERE failed_reason = 'unreadable failed message'`,
    );
    expect(unreadable).to.have.length(10);
    expect(unreadable[0].payload.raw).to.equal('null');
  });

  it('stores, once and bounded, bodies that broke the store or the log line', async () => {
    const deep =
      '{"type":' + '['.repeat(50_000) + ']'.repeat(50_000) + ',"id":9}';
    await publishRaw([
      // A reason that is no text: String() threw, and it was requeued for ever.
      json({
        type: 'worker',
        id: 1,
        scheduler_id: 1,
        failed_reason: {toString: 1},
      }),
      // NUL and a cut surrogate pair: jsonb refused them, and no row was kept.
      json({type: 'nope', junk: 'a\u0000b', failed_reason: 'poison'}),
      Buffer.concat([
        Buffer.from('{"raw":"'),
        Buffer.from('a'.repeat(10)),
        Buffer.from('\\ud83d', 'utf8'),
        Buffer.from('","failed_reason":"cut pair"}'),
      ]),
      // Ids PostgreSQL's integer cannot hold.
      json({
        type: 'worker',
        id: 2 ** 40,
        scheduler_id: 2 ** 31,
        failed_reason: 'big ids',
      }),
      // Too deep to write back as JSON (the engine's stack).
      Buffer.from(deep),
      // A type of 1 MB: kept neither as the type nor whole in the log.
      json({type: 'x'.repeat(1_000_000), failed_reason: 'huge type'}),
      // Review of the fix: keys and times the store still refused.
      json({'a\u0000b': 1, failed_reason: 'NUL in a key'}),
      json({'\ud800': 1, failed_reason: 'cut pair in a key'}),
      json({failed_at: '1', failed_reason: 'a time that is a number'}),
      json({
        failed_at: '-271821-04-20T00:00:00Z',
        failed_reason: 'a time out of range',
      }),
    ]);
    await consumer.start();
    await eventually(
      async () =>
        (await sql(`SELECT id FROM failed_task`)).length === 10 || undefined,
      60_000,
      'ten failed tasks',
    );
    await eventually(async () => (await queued()) === 0 || undefined);
    const rows = await sql<{
      failed_reason: string;
      scheduler_id: number | null;
      task_id: number | null;
      type: string | null;
      payload: Record<string, unknown>;
    }>(
      `SELECT failed_reason, scheduler_id, task_id, type, payload FROM failed_task`,
    );
    // Handled side by side (prefetch 10): found by reason, not by order.
    const byReason = new Map(rows.map(row => [row.failed_reason, row]));
    expect([...byReason.keys()].sort()).to.deepEqual(
      [
        '{"toString":1}',
        'poison',
        'cut pair',
        'big ids',
        'unknown',
        'huge type',
        'NUL in a key',
        'cut pair in a key',
        'a time that is a number',
        'a time out of range',
      ].sort(),
    );
    expect(byReason.get('poison')!.payload.junk).to.equal('a\uFFFDb');
    expect(byReason.get('cut pair')!.payload.raw).to.equal(
      'a'.repeat(10) + '\uFFFD',
    );
    expect(byReason.get('big ids')).to.containDeep({
      scheduler_id: null,
      task_id: null,
    });
    expect(byReason.get('unknown')!.payload).to.containDeep({
      note: 'the body could not be kept whole (nested too deep)',
    });
    expect(byReason.get('huge type')!.type).to.be.null();
    expect(byReason.get('NUL in a key')!.payload).to.containDeep({
      'a\uFFFDb': 1,
    });
    // Nothing was requeued, and every line of the consumer stayed short.
    expect(logs.find('Could not store failed task; requeued')).to.deepEqual([]);
    expect(Math.max(...logs.lines.map(line => line.length))).to.be.below(
      20_000,
    );
  });
});
