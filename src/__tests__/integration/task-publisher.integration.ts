import {expect} from '@loopback/testlab';
import type {ConfirmChannel} from 'amqplib';
import {once} from 'node:events';
import {AmqpConnection} from '../../queue/amqp-connection';
import {OutgoingTask, TaskPublisher} from '../../queue/task-publisher';
import {assertTopology, brokerTopology, TASK_QUEUE} from '../../queue/topology';
import {LogCapture} from '../fixtures/log-capture';
import {TcpProxy, viaPort} from '../fixtures/tcp-proxy';
import {
  drainQueue,
  resetBroker,
  TEST_AMQP_URL,
  TEST_RETRY,
} from '../fixtures/test-broker';

/** `count` reminder tasks with execution ids from `first`. */
function tasks(count: number, first = 1): OutgoingTask[] {
  return Array.from({length: count}, (_, i) => ({
    executionId: first + i,
    executionKey: `2026-11-28T10:00:00.000Z#${first + i}`,
    message: {
      type: 'reminder',
      id: 1,
      scheduler_id: 7,
      params_scheduler: '{}',
    },
  }));
}

/** The execution ids of the messages waiting in the task queue. */
async function queuedExecutionIds(): Promise<number[]> {
  const messages = await drainQueue(TASK_QUEUE);
  return messages.map(m => Number(m.properties.headers?.['x-execution-id']));
}

/** Polls `check` every 20 ms until it holds, or fails after 10 s. */
async function waitUntil(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in 10 s');
    await new Promise(resolve => setTimeout(resolve, 20));
  }
}

describe('TaskPublisher on a real broker', function (this: Mocha.Suite) {
  this.timeout(60_000);
  let connection: AmqpConnection;
  let logs: LogCapture;
  /** Every confirm channel the connection opened, in order. */
  let opened: ConfirmChannel[];

  beforeEach(async () => {
    await resetBroker();
    logs = new LogCapture();
    connection = new AmqpConnection(TEST_AMQP_URL, logs.logger, {
      onConnect: c =>
        assertTopology(() => c.createChannel(), brokerTopology(TEST_RETRY)),
    });
    await connection.start();
    opened = [];
    const create = connection.createConfirmChannel.bind(connection);
    connection.createConfirmChannel = async () => {
      const channel = await create();
      opened.push(channel);
      return channel;
    };
  });
  afterEach(() => connection.stop());

  /**
   * Has the `nth` channel opened close itself right after its `after`th
   * publish: a channel the broker or the network ends in the middle of a
   * batch (later publishes on it throw, its unconfirmed ones fail).
   */
  function closeMidway(nth: number, after: number) {
    const create = connection.createConfirmChannel.bind(connection);
    let count = 0;
    connection.createConfirmChannel = async () => {
      const channel = await create();
      if (++count !== nth) return channel;
      const publish = channel.publish.bind(channel);
      let calls = 0;
      channel.publish = (...args: Parameters<ConfirmChannel['publish']>) => {
        const accepted = publish(...args);
        if (++calls === after) channel.close().catch(() => undefined);
        return accepted;
      };
      return channel;
    };
  }

  it('spreads a batch over its channels and reports each message confirmed once', async () => {
    const publisher = new TaskPublisher(connection, logs.logger, undefined, {
      channels: 4,
    });
    const confirmed = await publisher.publish(tasks(2000));
    expect(confirmed.size).to.equal(2000);
    expect(opened).to.have.length(4);
    const ids = await queuedExecutionIds();
    expect(ids).to.have.length(2000);
    expect(new Set(ids).size).to.equal(2000);
    // The channels stay open for the next batch.
    await publisher.publish(tasks(8, 5000));
    expect(opened).to.have.length(4);
    await publisher.close();
  });

  it('a channel closed in the middle of a batch: its unconfirmed runs are reported not published, the rest stand', async () => {
    closeMidway(2, 100);
    const publisher = new TaskPublisher(connection, logs.logger, undefined, {
      channels: 4,
    });
    const confirmed = await publisher.publish(tasks(2000));
    // The other three channels' 1,500 runs all went out; of the closed
    // channel's 500 at most the 100 published before it closed.
    expect(confirmed.size).to.be.within(1500, 1600);
    const ids = await queuedExecutionIds();
    expect(new Set(ids).size).to.equal(ids.length);
    for (const id of confirmed.keys()) expect(ids).to.containEql(id);
    expect(logs.find('Some publishes were not confirmed')[0]).to.containDeep({
      confirmed: confirmed.size,
      not_confirmed: 2000 - confirmed.size,
    });
    const closed = logs.find('Publish channel failed during a batch');
    expect(closed).to.have.length(1);
    expect(closed[0]).to.match({not_sent: 400, error: /Channel closing/});
    // The next batch opens a channel in place of the closed one.
    const next = await publisher.publish(tasks(40, 9000));
    expect(next.size).to.equal(40);
    expect(opened).to.have.length(5);
    await publisher.close();
  });

  it('a broker that allows fewer channels: the batch goes out on those that open, with a warning', async () => {
    await connection.stop();
    logs = new LogCapture();
    connection = new AmqpConnection(
      `${TEST_AMQP_URL}?channelMax=3`,
      logs.logger,
      {
        onConnect: c =>
          assertTopology(() => c.createChannel(), brokerTopology(TEST_RETRY)),
      },
    );
    await connection.start();
    const publisher = new TaskPublisher(connection, logs.logger, undefined, {
      channels: 4,
    });
    for (const first of [1, 1001]) {
      const confirmed = await publisher.publish(tasks(1000, first));
      expect(confirmed.size).to.equal(1000);
    }
    const fewer = logs.find('Publishing on fewer channels than configured');
    expect(fewer).to.have.length(2);
    expect(fewer[0]).to.match({wanted: 4, opened: 3});
    expect(fewer[0].error).to.match(/channel/i);
    expect(await queuedExecutionIds()).to.have.length(2000);
    await publisher.close();
  });

  it('a broker that never confirms: the batch ends at its deadline, the unanswered count as not published', async () => {
    // The broker takes message 5 but its confirm never reaches the
    // publisher, as a connection stuck in flow control does.
    const create = connection.createConfirmChannel.bind(connection);
    connection.createConfirmChannel = async () => {
      const channel = await create();
      const publish = channel.publish.bind(channel);
      let calls = 0;
      channel.publish = (...args: Parameters<ConfirmChannel['publish']>) =>
        ++calls === 5
          ? publish(args[0], args[1], args[2], args[3], () => undefined)
          : publish(...args);
      return channel;
    };
    const publisher = new TaskPublisher(connection, logs.logger, undefined, {
      confirmTimeoutMs: 400,
    });
    const started = Date.now();
    const confirmed = await publisher.publish(tasks(20));
    expect(Date.now() - started).to.be.within(400, 5000);
    expect(confirmed.size).to.equal(19);
    expect(confirmed.has(5)).to.be.false();
    const timedOut = logs.find('Publish confirms timed out');
    expect(timedOut).to.have.length(1);
    expect(timedOut[0]).to.match({
      timeout_ms: 400,
      stage: 'waiting for confirms',
      tasks: 20,
      unanswered: 1,
    });
    // The connection that left it unanswered was dropped; the next batch
    // goes out on the new one, on a new channel.
    expect(logs.find('Broker connection dropped')[0]).to.match({
      reason: 'publish confirms timed out',
    });
    await once(connection, 'connected');
    const next = await publisher.publish(tasks(10, 100));
    expect(next.size).to.equal(9);
    expect(opened).to.have.length(2);
    await publisher.close();
  });

  it('a broker that never answers a channel open: the batch still ends at its deadline, and the next opens afresh', async () => {
    const create = connection.createConfirmChannel.bind(connection);
    let stalled = true;
    connection.createConfirmChannel = () =>
      stalled ? new Promise<ConfirmChannel>(() => undefined) : create();
    const publisher = new TaskPublisher(connection, logs.logger, undefined, {
      channels: 2,
      confirmTimeoutMs: 400,
    });
    const started = Date.now();
    const confirmed = await publisher.publish(tasks(10));
    expect(Date.now() - started).to.be.within(400, 5000);
    expect(confirmed.size).to.equal(0);
    const timedOut = logs.find('Publish confirms timed out');
    expect(timedOut).to.have.length(1);
    expect(timedOut[0]).to.match({stage: 'opening channels', unanswered: 10});
    // The stalled slots were let go and the connection dropped: a broker
    // answering again on the new one is enough.
    stalled = false;
    await once(connection, 'connected');
    const next = await publisher.publish(tasks(10, 100));
    expect(next.size).to.equal(10);
    await publisher.close();
  });

  /** An AmqpConnection to the test broker through a TcpProxy of its own. */
  async function proxiedConnection(
    options: {closeTimeoutMs?: number} = {},
  ): Promise<{proxy: TcpProxy; proxied: AmqpConnection}> {
    const broker = new URL(TEST_AMQP_URL);
    const proxy = new TcpProxy('127.0.0.1', Number(broker.port || 5672));
    const proxied = new AmqpConnection(
      viaPort(TEST_AMQP_URL, await proxy.start()),
      logs.logger,
      {minBackoffMs: 50, ...options},
    );
    await proxied.start();
    return {proxy, proxied};
  }

  it('a connection that stops answering is dropped at the deadline, and the next batch goes out on a fresh one', async () => {
    // The broker stops reading one connection (flow control) while it still
    // serves new ones: without the drop, every later batch timed out too.
    const {proxy, proxied} = await proxiedConnection();
    try {
      const publisher = new TaskPublisher(proxied, logs.logger, undefined, {
        channels: 2,
        confirmTimeoutMs: 400,
      });
      expect((await publisher.publish(tasks(10))).size).to.equal(10);
      proxy.stallOpen();
      const stuck = await publisher.publish(tasks(10, 100));
      expect(stuck.size).to.equal(0);
      expect(logs.find('Publish confirms timed out')).to.have.length(1);
      expect(logs.find('Broker connection dropped')).to.have.length(1);
      await once(proxied, 'connected');
      const fresh = await publisher.publish(tasks(10, 200));
      expect(fresh.size).to.equal(10);
      expect(proxy.accepted).to.equal(2);
      expect(logs.find('Publish confirms timed out')).to.have.length(1);
      // The socket this side destroyed is no broker error worth a line.
      expect(logs.find('Broker connection error')).to.have.length(0);
      // What the stuck connection held never reached the broker; the
      // sweeper sends those runs again.
      const ids = await queuedExecutionIds();
      expect(ids.sort((a, b) => a - b)).to.eql([
        ...tasks(10).map(t => t.executionId),
        ...tasks(10, 200).map(t => t.executionId),
      ]);
      await publisher.close();
    } finally {
      await proxied.stop();
      await proxy.close();
    }
  });

  it('a connection the broker blocks (a resource alarm) is kept: a fresh one would be blocked alike', async () => {
    // Review: under a memory alarm every drop left one more blocked
    // connection on the broker. The broker's own connection.blocked frame
    // (class 10, method 60, reason "low on memory") and connection.unblocked
    // (method 61) are written to the client while its connection is stalled.
    const {proxy, proxied} = await proxiedConnection();
    const frame = (method: number, reason?: string) => {
      const args =
        reason === undefined
          ? Buffer.alloc(0)
          : Buffer.concat([Buffer.from([reason.length]), Buffer.from(reason)]);
      const payload = Buffer.concat([Buffer.from([0, 10, 0, method]), args]);
      const header = Buffer.alloc(7);
      header.writeUInt8(1, 0);
      header.writeUInt16BE(0, 1);
      header.writeUInt32BE(payload.length, 3);
      return Buffer.concat([header, payload, Buffer.from([0xce])]);
    };
    try {
      const publisher = new TaskPublisher(proxied, logs.logger, undefined, {
        confirmTimeoutMs: 400,
      });
      expect((await publisher.publish(tasks(4))).size).to.equal(4);
      proxy.stallOpen();
      proxy.sendToClients(frame(60, 'low on memory'));
      await waitUntil(() => proxied.blocked !== undefined);
      expect(logs.find('Broker blocks publishing')[0]).to.match({
        reason: 'low on memory',
      });
      const stuck = await publisher.publish(tasks(4, 100));
      expect(stuck.size).to.equal(0);
      expect(logs.find('Publish confirms timed out')[0]).to.match({
        broker_blocked: 'low on memory',
      });
      expect(logs.find('Broker connection dropped')).to.have.length(0);
      expect(proxied.connected).to.be.true();
      // The alarm clears: the same connection publishes again.
      proxy.sendToClients(frame(61));
      proxy.restore();
      await waitUntil(() => proxied.blocked === undefined);
      const later = await publisher.publish(tasks(4, 200));
      expect(later.size).to.equal(4);
      expect(proxy.accepted).to.equal(1);
      await publisher.close();
    } finally {
      await proxied.stop();
      await proxy.close();
    }
  });

  it('stop() on a connection the broker no longer reads ends at its close timeout', async () => {
    const {proxy, proxied} = await proxiedConnection({closeTimeoutMs: 300});
    try {
      proxy.stallOpen();
      await proxied.stop();
      expect(logs.find('Broker connection closed')[0]).to.match({
        unanswered_close: true,
      });
      expect(proxied.connected).to.be.false();
    } finally {
      await proxy.close();
    }
  });

  it('a single channel closed in the middle of a batch keeps what was confirmed before', async () => {
    closeMidway(1, 500);
    const publisher = new TaskPublisher(connection, logs.logger);
    const confirmed = await publisher.publish(tasks(1000));
    expect(confirmed.size).to.be.below(501);
    const ids = await queuedExecutionIds();
    for (const id of confirmed.keys()) expect(ids).to.containEql(id);
    expect(logs.find('Some publishes were not confirmed')[0]).to.containDeep({
      not_confirmed: 1000 - confirmed.size,
    });
    const closed = logs.find('Publish channel failed during a batch');
    expect(closed).to.have.length(1);
    expect(closed[0]).to.match({not_sent: 500});
    await publisher.close();
  });
});
