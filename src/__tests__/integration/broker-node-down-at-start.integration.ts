import {expect} from '@loopback/testlab';
import amqp from 'amqplib';
import {AmqpConnection} from '../../queue/amqp-connection';
import {
  assertTopology,
  brokerTopology,
  FAILED_QUEUE,
  RetrySettings,
} from '../../queue/topology';
import {LogCapture} from '../fixtures/log-capture';
import {ClusterNode, RabbitCluster} from '../fixtures/rabbitmq-cluster';
import {eventually} from '../fixtures/test-consumer';

const CLASSIC: RetrySettings = {
  retryDelayMs: 600_000,
  multiplier: 2,
  maxRetries: 2,
  queueType: 'classic',
};
const VHOST = 'node_down_at_start';

function urlOf(node: ClusterNode): string {
  return `amqp://guest:guest@127.0.0.1:${node.amqpPort}/${VHOST}`;
}

/**
 * CI found a consumer of the fleet profile dead at its start: declaring the
 * failed queue got `404 NOT_FOUND - home node ... of durable queue ... is
 * down or inaccessible`, which start() threw, so the process exited, while
 * the same error on a reconnect is retried. A broker that cannot serve a
 * queue for now is the broker being unavailable, not a wrong configuration.
 * Reproduced deterministically with classic queues (AMQP_QUEUE_TYPE=classic),
 * whose home node is the one that declared them.
 */
describe('broker: a process that starts while a queue is unavailable (CI fleet run)', function (this: Mocha.Suite) {
  let cluster: RabbitCluster;
  this.timeout(240_000);

  before(async () => {
    cluster = await RabbitCluster.start(2, {killOnSignal: true});
    await cluster.addVhost(VHOST);
  });
  after(async () => {
    await cluster?.stop();
  });

  it('waits for the queue and connects when its home node is back, instead of failing its start', async () => {
    const [live, home] = cluster.nodes;
    // The topology is declared through `home`, so its classic queues live there.
    const declaring = await amqp.connect(urlOf(home));
    await assertTopology(
      () => declaring.createChannel(),
      brokerTopology(CLASSIC),
    );
    await declaring.close();
    await cluster.stopNode(home.name);

    const logs = new LogCapture();
    const connection = new AmqpConnection(urlOf(live), logs.logger, {
      onConnect: opened =>
        assertTopology(() => opened.createChannel(), brokerTopology(CLASSIC)),
      minBackoffMs: 200,
      maxBackoffMs: 1000,
    });
    let connected = 0;
    connection.on('connected', () => connected++);
    try {
      await connection.start();
      expect(connection.connected).to.be.false();
      await eventually(
        () =>
          logs
            .find('Broker unavailable, reconnecting')
            .some(r => /down or inaccessible/.test(String(r.error))),
        10_000,
        'a logged retry naming the unavailable queue',
      );
      expect(logs.find('Broker setup failed')).to.have.length(0);

      await cluster.startNode(home.name);
      await eventually(() => connected === 1, 60_000, 'a connection');
      expect(connection.connected).to.be.true();
      const channel = await connection.createChannel();
      const failed = await channel.checkQueue(FAILED_QUEUE);
      expect(failed.queue).to.equal(FAILED_QUEUE);
      await channel.close();
    } finally {
      await connection.stop();
    }
  });

  it('still fails its start on a topology that does not match (a configuration to fix)', async () => {
    const [live, home] = cluster.nodes;
    if (!(await cluster.runningNodes()).includes(home.name)) {
      await cluster.startNode(home.name);
    }
    const declaring = await amqp.connect(urlOf(live));
    await assertTopology(
      () => declaring.createChannel(),
      brokerTopology(CLASSIC),
    );
    await declaring.close();
    const logs = new LogCapture();
    // The queues exist as classic queues; quorum ones are asked for.
    const connection = new AmqpConnection(urlOf(live), logs.logger, {
      onConnect: opened =>
        assertTopology(
          () => opened.createChannel(),
          brokerTopology({...CLASSIC, queueType: 'quorum'}),
        ),
      minBackoffMs: 200,
      maxBackoffMs: 1000,
    });
    try {
      await expect(connection.start()).to.be.rejectedWith(
        /npm run queues:migrate/,
      );
      expect(connection.connected).to.be.false();
    } finally {
      await connection.stop();
    }
  });

  it('still fails its start on a queue or exchange that does not exist (404 without a node down)', async () => {
    const [live] = cluster.nodes;
    const connection = new AmqpConnection(
      urlOf(live),
      new LogCapture().logger,
      {
        onConnect: async opened => {
          const channel = await opened.createChannel();
          channel.on('error', () => undefined);
          await channel.checkQueue('no_such_queue');
        },
        minBackoffMs: 200,
        maxBackoffMs: 1000,
      },
    );
    try {
      await expect(connection.start()).to.be.rejectedWith(
        /404 \(NOT-FOUND\).*no queue 'no_such_queue'/,
      );
    } finally {
      await connection.stop();
    }
  });

  it('retries a start whose connection the broker closed during the setup, and keeps one connection (review)', async () => {
    const [live] = cluster.nodes;
    const logs = new LogCapture();
    let setups = 0;
    const connection = new AmqpConnection(urlOf(live), logs.logger, {
      onConnect: async opened => {
        setups++;
        if (setups === 1) {
          // The node closes every connection of the vhost mid-setup, as a
          // node going down or an operator's close_connection would.
          const channel = await opened.createChannel();
          channel.on('error', () => undefined);
          const closed = new Promise(resolve => channel.once('close', resolve));
          await cluster.ctl(live.name, [
            'close_all_connections',
            '-p',
            VHOST,
            'test: closed during setup',
          ]);
          await closed;
        }
        await assertTopology(
          () => opened.createChannel(),
          brokerTopology(CLASSIC),
        );
      },
      minBackoffMs: 200,
      maxBackoffMs: 1000,
    });
    let connected = 0;
    connection.on('connected', () => connected++);
    try {
      await connection.start();
      await eventually(() => connected === 1, 20_000, 'a connection');
      expect(setups).to.equal(2);
      expect(logs.find('Broker unavailable, reconnecting')).to.have.length(1);
    } finally {
      await connection.stop();
    }
    await eventually(
      async () =>
        (
          await cluster.ctl(live.name, [
            '-q',
            'list_connections',
            '-p',
            VHOST,
            '--no-table-headers',
            'name',
          ])
        ).trim() === '',
      10_000,
      'no connection left open',
    );
    expect(connected).to.equal(1);
  });
});
