import {expect} from '@loopback/testlab';
import type {ConfirmChannel} from 'amqplib';
import {Subscription} from '../../consumer/subscription';
import {AmqpConnection} from '../../queue/amqp-connection';
import {LogCapture} from '../fixtures/log-capture';
import {
  closeVhostConnections,
  TEST_AMQP_URL,
  withChannel,
} from '../fixtures/test-broker';
import {eventually} from '../fixtures/test-consumer';

const QUEUE = 'subscription_closed_before_listening';

/**
 * A subscription to QUEUE on a connection of its own, whose first channel
 * `spoil` closes (one way or another) before the subscription holds it.
 */
async function givenSpoiledFirstChannel(
  spoil: (channel: ConfirmChannel) => Promise<void>,
) {
  const logs = new LogCapture();
  const connection = new AmqpConnection(TEST_AMQP_URL, logs.logger, {
    minBackoffMs: 20,
    maxBackoffMs: 100,
  });
  await connection.start();
  const counts = {opened: 0, connects: 0};
  connection.on('connected', () => counts.connects++);
  const subscription = new Subscription<ConfirmChannel>({
    queue: QUEUE,
    connection,
    logger: logs.logger,
    openChannel: async opening => {
      const channel = await opening.createConfirmChannel();
      if (++counts.opened === 1) await spoil(channel);
      return channel;
    },
    consume: async channel =>
      (await channel.consume(QUEUE, () => undefined)).consumerTag,
    minBackoffMs: 20,
    maxBackoffMs: 100,
  });
  const stop = async () => {
    await subscription.close();
    await connection.stop();
  };
  return {logs, subscription, counts, stop};
}

/**
 * CI's chaos run (seed 1891137901) ended with a worker that no longer
 * consumed the report queue. A broker stall had held a resubscription's
 * channel open; when the bytes flowed again, amqplib read the channel's
 * last reply and, in the same read, a frame that made it close the
 * connection: the channel emitted 'close' before the subscription listened
 * for it. The subscription kept that dead channel as its current one, so
 * every later attempt (the reconnect's too) found it "subscribed".
 */
describe('consumer subscription: a channel that closed before it was listened to', () => {
  before(() =>
    withChannel(channel => channel.assertQueue(QUEUE, {durable: false})),
  );
  after(() => withChannel(channel => channel.deleteQueue(QUEUE)));

  it('lets the channel go and subscribes again', async () => {
    // Closed, its 'close' event gone, by the time the subscription holds it.
    const given = await givenSpoiledFirstChannel(channel => channel.close());
    try {
      await given.subscription.start();
      await eventually(
        () => given.subscription.active,
        5000,
        'a live subscription',
      );
      expect(given.counts.opened).to.equal(2);
      expect(
        given.logs.find('Could not consume', {queue: QUEUE}),
      ).to.have.length(1);
    } finally {
      await given.stop();
    }
  });

  it('subscribes again on the next connection when the connection died under the new channel (the CI case)', async () => {
    // The broker drops the connection before the subscription listens on
    // the channel: its 'close' has been emitted already.
    const given = await givenSpoiledFirstChannel(async channel => {
      const closed = new Promise(resolve => channel.once('close', resolve));
      await closeVhostConnections();
      await closed;
    });
    try {
      await given.subscription.start();
      await eventually(
        () => given.subscription.active,
        10_000,
        'a live subscription',
      );
      expect(given.counts.connects).to.equal(1);
      expect(given.counts.opened).to.equal(2);
    } finally {
      await given.stop();
    }
  });
});
