import {execFile} from 'node:child_process';
import {promisify} from 'node:util';
import {expect} from '@loopback/testlab';
import amqp from 'amqplib';
import {AmqpConnection} from '../../queue/amqp-connection';
import {holdingQueueOf, migrateQueues} from '../../queue/queue-migration';
import {
  assertTopology,
  brokerTopology,
  RetrySettings,
  TASK_QUEUE,
  TopologyMismatchError,
} from '../../queue/topology';
import {RabbitMqCheck} from '../../health/dependency-checks';
import {LogCapture} from '../fixtures/log-capture';
import {
  resetBroker,
  TEST_AMQP_URL,
  TEST_VHOST,
  withChannel,
} from '../fixtures/test-broker';
import {eventually} from '../fixtures/test-consumer';

/** Long delays: nothing expires while the test looks at the tiers. */
const SLOW: RetrySettings = {
  retryDelayMs: 600_000,
  multiplier: 2,
  maxRetries: 2,
};

async function deleteQueues(names: string[]): Promise<void> {
  await withChannel(async channel => {
    for (const name of names) await channel.deleteQueue(name);
  });
}

/** Each queue's type, as the broker lists it. */
async function queueTypes(): Promise<Record<string, string>> {
  const {stdout} = await promisify(execFile)(
    'rabbitmqctl',
    [
      '-q',
      'list_queues',
      '-p',
      TEST_VHOST,
      '--no-table-headers',
      'name',
      'type',
    ],
    {env: {...process.env, PATH: `${process.env.PATH}:/usr/sbin`}},
  );
  return Object.fromEntries(
    stdout
      .trim()
      .split('\n')
      .map(line => line.trim().split(/\s+/) as [string, string]),
  );
}

describe('broker topology: quorum queues, their migration, a list of nodes (issue 23)', () => {
  const names = brokerTopology(SLOW).queues.map(q => q.name);
  afterEach(async () => {
    await deleteQueues([...names, ...names.map(holdingQueueOf)]);
    await resetBroker();
  });

  it('declares quorum queues by default, classic ones on request', () => {
    const quorum = brokerTopology(SLOW);
    for (const queue of quorum.queues) {
      expect(queue.options.arguments).to.containDeep({
        'x-queue-type': 'quorum',
      });
    }
    const task = quorum.queues.find(q => q.name === TASK_QUEUE)!;
    expect(task.options.arguments).to.containDeep({
      'x-dead-letter-strategy': 'at-least-once',
      'x-overflow': 'reject-publish',
    });
    const classic = brokerTopology({...SLOW, queueType: 'classic'});
    for (const queue of classic.queues) {
      expect(queue.options.arguments ?? {}).to.not.have.property(
        'x-queue-type',
      );
    }
  });

  it('refuses to start on classic queues of an earlier version, naming the migration command', async () => {
    await deleteQueues(names);
    const open = async () => {
      const connection = await amqp.connect(TEST_AMQP_URL);
      const channel = await connection.createChannel();
      channel.on('close', () => {
        connection.close().catch(() => undefined);
      });
      return channel;
    };
    await assertTopology(open, brokerTopology({...SLOW, queueType: 'classic'}));
    await expect(assertTopology(open, brokerTopology(SLOW))).to.be.rejectedWith(
      TopologyMismatchError,
    );
    await expect(assertTopology(open, brokerTopology(SLOW))).to.be.rejectedWith(
      /npm run queues:migrate/,
    );
  });

  it('moves every message of classic queues into quorum queues, and a second run changes nothing', async () => {
    await deleteQueues(names);
    const classic = brokerTopology({...SLOW, queueType: 'classic'});
    const connection = await amqp.connect(TEST_AMQP_URL);
    try {
      await assertTopology(() => connection.createChannel(), classic);
      const channel = await connection.createConfirmChannel();
      // Three messages in every queue, each naming its queue and number.
      for (const name of names) {
        for (let n = 1; n <= 3; n++) {
          channel.sendToQueue(name, Buffer.from(`${name}#${n}`), {
            persistent: true,
            headers: {'x-retry-count': n},
          });
        }
      }
      await channel.waitForConfirms();
      await channel.close();
      const logs = new LogCapture();
      const first = await migrateQueues(
        connection,
        brokerTopology(SLOW),
        logs.logger,
      );
      expect(
        first.every(r => r.state === 'migrated' && r.moved === 3),
      ).to.be.true();
      const types = await queueTypes();
      for (const name of names) expect(types[name]).to.equal('quorum');
      expect(
        Object.keys(types).some(name => name.endsWith('.migrating')),
      ).to.be.false();
      const second = await migrateQueues(
        connection,
        brokerTopology(SLOW),
        logs.logger,
      );
      expect(second.map(r => r.state)).to.deepEqual(names.map(() => 'current'));
      const contents = await withChannel(async ch => {
        const found: Record<string, string[]> = {};
        for (const name of names) {
          found[name] = [];
          for (;;) {
            const message = await ch.get(name, {noAck: true});
            if (message === false) break;
            expect(
              message.properties.headers?.['x-retry-count'],
            ).to.be.a.Number();
            found[name].push(message.content.toString());
          }
        }
        return found;
      });
      for (const name of names) {
        expect(contents[name].sort()).to.deepEqual([
          `${name}#1`,
          `${name}#2`,
          `${name}#3`,
        ]);
      }
    } finally {
      await connection.close().catch(() => undefined);
    }
  });

  it('finishes an interrupted migration: messages left in the holding queue go back', async () => {
    await deleteQueues(names);
    await assertTopology(async () => {
      const connection = await amqp.connect(TEST_AMQP_URL);
      const channel = await connection.createChannel();
      channel.on('close', () => {
        connection.close().catch(() => undefined);
      });
      return channel;
    }, brokerTopology(SLOW));
    await withChannel(async channel => {
      await channel.assertQueue(holdingQueueOf(TASK_QUEUE), {
        durable: true,
        arguments: {'x-queue-type': 'quorum'},
      });
      channel.sendToQueue(holdingQueueOf(TASK_QUEUE), Buffer.from('held'), {
        persistent: true,
      });
      await new Promise(resolve => setTimeout(resolve, 100));
    });
    const connection = await amqp.connect(TEST_AMQP_URL);
    try {
      const results = await migrateQueues(
        connection,
        brokerTopology(SLOW),
        new LogCapture().logger,
      );
      expect(results.find(r => r.queue === TASK_QUEUE)).to.containDeep({
        state: 'migrated',
        moved: 1,
      });
    } finally {
      await connection.close().catch(() => undefined);
    }
    const message = await withChannel(channel =>
      channel.get(TASK_QUEUE, {noAck: true}),
    );
    expect(message && message.content.toString()).to.equal('held');
  });

  it('connects to a reachable node of a comma-separated AMQP_URL, and readiness agrees', async () => {
    const deadNode = TEST_AMQP_URL.replace(
      /:\/\/([^@]*@)?[^/:]+(:\d+)?/,
      '://$1127.0.0.1:1',
    );
    const list = `${deadNode},${TEST_AMQP_URL}`;
    const logs = new LogCapture();
    const connection = new AmqpConnection(list, logs.logger, {
      minBackoffMs: 20,
      maxBackoffMs: 50,
    });
    try {
      // Shuffled order: whichever comes first, the live node is reached.
      await connection.start();
      await eventually(() => connection.connected, 5000, 'a connection');
      expect(logs.records.some(r => r.msg === 'Broker connected')).to.be.true();
      expect(JSON.stringify(logs.records)).to.not.match(/guest:guest/);
    } finally {
      await connection.stop();
    }
    expect(await new RabbitMqCheck(list, 2000).run()).to.deepEqual({
      status: 'up',
    });
    await expect(
      new RabbitMqCheck(`${deadNode},${deadNode}`, 2000).run(),
    ).to.be.rejected();
  });
});
