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

/** Declares the classic topology through `node`: its queues live there. */
async function declareClassicThrough(node: ClusterNode): Promise<void> {
  const declaring = await amqp.connect(urlOf(node));
  try {
    await assertTopology(
      () => declaring.createChannel(),
      brokerTopology(CLASSIC),
    );
  } finally {
    await declaring.close();
  }
}

/** A service connection to `node` running `onConnect`, its connects counted. */
function connectionTo(
  node: ClusterNode,
  onConnect: (opened: AmqpConnection) => Promise<void>,
) {
  const logs = new LogCapture();
  const connection = new AmqpConnection(urlOf(node), logs.logger, {
    onConnect,
    minBackoffMs: 200,
    maxBackoffMs: 1000,
  });
  const counts = {connects: 0};
  connection.on('connected', () => counts.connects++);
  return {connection, logs, counts};
}

/** The service's own setup with a topology (quorum or classic queues). */
const declaring =
  (settings: RetrySettings) =>
  (opened: AmqpConnection): Promise<void> =>
    assertTopology(() => opened.createChannel(), brokerTopology(settings));

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
    await declareClassicThrough(home);
    await cluster.stopNode(home.name);

    const {connection, logs, counts} = connectionTo(live, declaring(CLASSIC));
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
      await eventually(() => counts.connects === 1, 60_000, 'a connection');
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
    await declareClassicThrough(live);
    // The queues exist as classic queues; quorum ones are asked for.
    const {connection} = connectionTo(
      live,
      declaring({...CLASSIC, queueType: 'quorum'}),
    );
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
    const {connection} = connectionTo(live, async opened => {
      const channel = await opened.createChannel();
      channel.on('error', () => undefined);
      await channel.checkQueue('no_such_queue');
    });
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
    let setups = 0;
    const {connection, logs, counts} = connectionTo(live, async opened => {
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
      await declaring(CLASSIC)(opened);
    });
    try {
      await connection.start();
      await eventually(() => counts.connects === 1, 20_000, 'a connection');
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
    expect(counts.connects).to.equal(1);
  });
});
