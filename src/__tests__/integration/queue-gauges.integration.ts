import {expect} from '@loopback/testlab';
import amqp from 'amqplib';
import {Metrics} from '../../metrics/metrics';
import {watchQueueGauges} from '../../metrics/queue-gauges';
import {AmqpConnection} from '../../queue/amqp-connection';
import {LogCapture} from '../fixtures/log-capture';
import {TEST_AMQP_URL, withChannel} from '../fixtures/test-broker';

/** A queue of this test alone, so the run's topology is left as it is. */
const QUEUE = `queue-gauges-${process.pid}`;

function gaugeLine(text: string, name: string): string | undefined {
  return text
    .split('\n')
    .find(line => line.startsWith(`${name}{queue="${QUEUE}"}`));
}

/**
 * Review of issue 16: a queue the consumer cannot read (deleted, or the
 * broker gone) must not keep exporting its last depth and consumer count,
 * or "no consumer on cron_scheduler" never fires while nothing consumes.
 */
describe('queue gauges at scrape time (real broker)', () => {
  let connection: AmqpConnection;
  let logs: LogCapture;
  let metrics: Metrics;

  beforeEach(async () => {
    logs = new LogCapture();
    metrics = new Metrics(new Set(['consumer']), {version: 't'});
    connection = new AmqpConnection(TEST_AMQP_URL, logs.logger);
    await connection.start();
    const publisher = await amqp.connect(TEST_AMQP_URL);
    try {
      const channel = await publisher.createConfirmChannel();
      await channel.assertQueue(QUEUE, {durable: false});
      for (let i = 0; i < 3; i++) channel.sendToQueue(QUEUE, Buffer.from('x'));
      await channel.waitForConfirms();
    } finally {
      await publisher.close();
    }
    // No cache: each scrape reads the broker.
    watchQueueGauges(metrics, connection, [QUEUE], logs.logger, 0);
  });
  afterEach(async () => {
    await connection.stop();
    await withChannel(channel => channel.deleteQueue(QUEUE));
  });

  it('export a readable queue, then drop its series once it is deleted', async () => {
    let text = (await metrics.text()).body;
    expect(gaugeLine(text, 'task_scheduler_queue_messages')).to.equal(
      `task_scheduler_queue_messages{queue="${QUEUE}"} 3`,
    );
    expect(gaugeLine(text, 'task_scheduler_queue_consumers')).to.equal(
      `task_scheduler_queue_consumers{queue="${QUEUE}"} 0`,
    );
    await withChannel(channel => channel.deleteQueue(QUEUE));
    text = (await metrics.text()).body;
    expect(gaugeLine(text, 'task_scheduler_queue_messages')).to.be.undefined();
    expect(gaugeLine(text, 'task_scheduler_queue_consumers')).to.be.undefined();
    // Once per read (here uncached: one per gauge), naming the queue.
    const warned = logs.find('Metrics: queue depths unreadable');
    expect(warned).to.not.be.empty();
    expect(warned.map(record => record.queues)).to.matchEach([QUEUE]);
  });

  it('drop every queue series while the broker is not connected, and bring them back after', async () => {
    expect(
      gaugeLine((await metrics.text()).body, 'task_scheduler_queue_messages'),
    ).to.not.be.undefined();
    await connection.stop();
    const text = (await metrics.text()).body;
    expect(gaugeLine(text, 'task_scheduler_queue_messages')).to.be.undefined();
    expect(gaugeLine(text, 'task_scheduler_queue_consumers')).to.be.undefined();
    await connection.start();
    expect(
      gaugeLine((await metrics.text()).body, 'task_scheduler_queue_messages'),
    ).to.equal(`task_scheduler_queue_messages{queue="${QUEUE}"} 3`);
  });
});
