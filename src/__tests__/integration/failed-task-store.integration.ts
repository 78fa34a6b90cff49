import {expect} from '@loopback/testlab';
import type {Pool} from 'pg';
import {FailedTaskConsumer} from '../../consumer/failed-task-consumer';
import {isTransientDatabaseError} from '../../database/transient-error';
import {createPool} from '../../database/pg-pool';
import {AmqpConnection} from '../../queue/amqp-connection';
import {
  assertTopology,
  brokerTopology,
  FAILED_QUEUE,
} from '../../queue/topology';
import {LogCapture} from '../fixtures/log-capture';
import {TcpProxy} from '../fixtures/tcp-proxy';
import {
  drainQueue,
  resetBroker,
  TEST_AMQP_URL,
  TEST_RETRY,
  withChannel,
} from '../fixtures/test-broker';
import {eventually} from '../fixtures/test-consumer';
import {sql, TEST_DATABASE_URL, truncateAll} from '../fixtures/test-database';

/**
 * Found by the chaos suite (full profile, seed 7): during a database cut the
 * failed-queue consumer acknowledged failed tasks it could not store, so they
 * were missing from `failed_task` (no inspection, no re-drive) although the
 * run ledger said `failed`.
 */
describe('failed-queue consumer during a database outage', () => {
  let proxy: TcpProxy;
  let pool: Pool;
  let connection: AmqpConnection;
  let consumer: FailedTaskConsumer;
  const logs = new LogCapture();

  beforeEach(async () => {
    logs.clear();
    await truncateAll();
    await resetBroker();
    const target = new URL(TEST_DATABASE_URL);
    proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
    await proxy.start();
    const viaProxy = new URL(TEST_DATABASE_URL);
    viaProxy.host = `127.0.0.1:${proxy.port}`;
    pool = createPool(viaProxy.toString(), logs.logger);
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
    await proxy.close();
    await pool.end().catch(() => undefined);
  });

  const publishFailed = (body: object) =>
    withChannel(async channel => {
      channel.sendToQueue(FAILED_QUEUE, Buffer.from(JSON.stringify(body)), {
        persistent: true,
        headers: {'x-execution-id': 77},
      });
      await new Promise(resolve => setTimeout(resolve, 20));
    });

  it('keeps the task until the database is back, then stores it once', async () => {
    proxy.cut();
    await consumer.start();
    await publishFailed({
      type: 'worker',
      id: 1,
      scheduler_id: 5,
      params_scheduler: '{}',
      failed_at: '2026-11-21T20:00:00.000Z',
      failed_reason: 'worker exited with code 1',
      retry_count: 3,
    });
    await eventually(
      () => logs.find('Could not store failed task; requeued').length > 0,
      10_000,
      'a requeue during the outage',
    );
    expect(logs.find('Could not store failed task')).to.have.length(0);

    proxy.restore();
    const rows = await eventually(async () => {
      const found = await sql(`SELECT * FROM failed_task`);
      return found.length > 0 ? found : undefined;
    });
    await new Promise(resolve => setTimeout(resolve, 1500));
    expect(await sql(`SELECT * FROM failed_task`)).to.have.length(1);
    expect(rows[0]).to.containDeep({
      execution_id: '77',
      scheduler_id: 5,
      failed_reason: 'worker exited with code 1',
    });
    expect(await drainQueue(FAILED_QUEUE)).to.have.length(0);
  });

  it('stores a failure delivered twice (its ack lost) once', async () => {
    await consumer.start();
    const failure = {
      type: 'worker',
      id: 1,
      scheduler_id: 5,
      params_scheduler: '{}',
      failed_at: '2026-11-21T20:00:00.000Z',
      failed_reason: 'worker exited with code 1',
      retry_count: 3,
    };
    await publishFailed(failure);
    await publishFailed(failure);
    await eventually(
      () => logs.find('PERMANENTLY FAILED TASK').length >= 2,
      10_000,
      'both deliveries to be handled',
    );
    // Both were acknowledged once handled; give the second insert time to land.
    await new Promise(resolve => setTimeout(resolve, 300));
    expect(await drainQueue(FAILED_QUEUE)).to.have.length(0);
    expect(await sql(`SELECT execution_id FROM failed_task`)).to.deepEqual([
      {execution_id: '77'},
    ]);
    expect(logs.find('Could not store failed task')).to.have.length(0);
  });

  it('tells passing database errors from lasting ones', () => {
    expect(
      isTransientDatabaseError(new Error('Connection terminated')),
    ).to.be.true();
    expect(isTransientDatabaseError({code: 'ECONNRESET'})).to.be.true();
    // Five letters like a SQLSTATE, but a socket error (second review).
    expect(isTransientDatabaseError({code: 'EPIPE'})).to.be.true();
    expect(isTransientDatabaseError({code: '57P01'})).to.be.true();
    expect(isTransientDatabaseError({code: '08006'})).to.be.true();
    expect(isTransientDatabaseError({code: '22P02'})).to.be.false();
    expect(isTransientDatabaseError({code: '23505'})).to.be.false();
  });
});
