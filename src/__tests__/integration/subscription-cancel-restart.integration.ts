import {expect} from '@loopback/testlab';
import type {ConfirmChannel, ConsumeMessage} from 'amqplib';
import {publishConfirmed} from '../../consumer/confirmed-publish';
import {Subscription} from '../../consumer/subscription';
import {AmqpConnection} from '../../queue/amqp-connection';
import {LogCapture} from '../fixtures/log-capture';
import {TEST_AMQP_URL, withChannel} from '../fixtures/test-broker';
import {eventually} from '../fixtures/test-consumer';

/** A subscription to a queue of its own that acks and records every message. */
async function givenSubscription(queue: string) {
  await withChannel(async channel => {
    await channel.deleteQueue(queue);
    await channel.assertQueue(queue, {durable: false});
  });
  const logs = new LogCapture();
  const connection = new AmqpConnection(TEST_AMQP_URL, logs.logger, {
    minBackoffMs: 20,
    maxBackoffMs: 100,
  });
  await connection.start();
  const received: string[] = [];
  const counts = {opened: 0};
  const subscription = new Subscription<ConfirmChannel>({
    queue,
    connection,
    logger: logs.logger,
    openChannel: async opening => {
      counts.opened++;
      return opening.createConfirmChannel();
    },
    consume: async channel => {
      await channel.prefetch(1);
      const {consumerTag} = await channel.consume(
        queue,
        (message: ConsumeMessage | null) => {
          if (!message) return;
          received.push(message.content.toString());
          channel.ack(message);
        },
      );
      return consumerTag;
    },
    minBackoffMs: 20,
    maxBackoffMs: 100,
  });
  return {
    logs,
    subscription,
    received,
    counts,
    /**
     * Sends `body` to the queue on a channel of its own. The round trip
     * after it on that channel returns once the broker has taken the
     * message: the connection's close may otherwise leave before it.
     */
    send: (body: string) =>
      withChannel(async channel => {
        channel.sendToQueue(queue, Buffer.from(body));
        await channel.checkQueue(queue);
      }),
    /** Messages waiting in the queue, not handed to any consumer. */
    waiting: () =>
      withChannel(
        async channel => (await channel.checkQueue(queue)).messageCount,
      ),
    stop: async () => {
      await subscription.close();
      await connection.stop();
      await withChannel(channel => channel.deleteQueue(queue));
    },
  };
}

/**
 * Noticed in a review and left alone then: `cancel()` kept its channel (to
 * settle the deliveries in hand) and `start()` found that channel current,
 * so it took it for subscribed and registered no consumer. A consumer
 * stopped and started again stayed up and ready, consuming nothing.
 */
describe('consumer subscription: cancelled, then started again', () => {
  it('consumes again on the channel it kept', async () => {
    const given = await givenSubscription('subscription_restart_kept');
    try {
      await given.subscription.start();
      await given.send('before the cancel');
      await eventually(() => given.received.length === 1, 5000, 'message 1');

      await given.subscription.cancel();
      expect(given.subscription.active).to.be.false();
      await given.send('while cancelled');
      // Held by the queue, not handed to the cancelled consumer.
      await eventually(async () => (await given.waiting()) === 1, 5000);
      expect(given.received).to.deepEqual(['before the cancel']);

      await given.subscription.start();
      expect(given.subscription.active).to.be.true();
      await eventually(() => given.received.length === 2, 5000, 'message 2');
      expect(given.received).to.deepEqual([
        'before the cancel',
        'while cancelled',
      ]);
      // The kept channel took it: no second channel was opened.
      expect(given.counts.opened).to.equal(1);
      expect(given.logs.find('Consuming')).to.have.length(2);
    } finally {
      await given.stop();
    }
  });

  it('adds no listener to the kept channel per restart (review: one more each time, a leak warning after ten)', async () => {
    const given = await givenSubscription('subscription_restart_listeners');
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      await given.subscription.start();
      // Publishing on the channel, as the task and webhook consumers do.
      const channel = given.subscription.channel!;
      for (let cycle = 0; cycle < 12; cycle++) {
        await given.subscription.cancel();
        await given.subscription.start();
        await publishConfirmed(
          channel,
          '',
          'subscription_restart_listeners_nowhere',
          Buffer.from(`${cycle}`),
          {},
        ).catch(() => undefined);
      }
      expect(given.subscription.channel).to.equal(channel);
      // publishConfirmed's own, if any: none per consume or per publish.
      expect(channel.listenerCount('return')).to.be.belowOrEqual(1);
      await given.send('after twelve restarts');
      await eventually(() => given.received.length === 1, 5000, 'the message');
      expect(warnings.map(w => w.name)).to.not.containEql(
        'MaxListenersExceededWarning',
      );
    } finally {
      process.off('warning', onWarning);
      await given.stop();
    }
  });

  // Review: cancel() and close() cancelled whatever consumer they found
  // once their own wait ended, a start() made meanwhile included: started,
  // consuming nothing, and nothing to retry it.
  for (const halt of ['cancel', 'close'] as const) {
    it(`keeps consuming when start() is called while ${halt}() is under way`, async () => {
      const given = await givenSubscription(`subscription_restart_${halt}`);
      try {
        await given.subscription.start();
        const halting = given.subscription[halt]();
        await given.subscription.start();
        await halting;
        expect(given.subscription.active).to.be.true();
        await given.send('after the race');
        await eventually(() => given.received.length === 1, 5000, 'message');
      } finally {
        await given.stop();
      }
    });

    it(`keeps consuming when start() is called while ${halt}() waits for a first subscription`, async () => {
      const given = await givenSubscription(`subscription_first_${halt}`);
      try {
        const starting = given.subscription.start();
        const halting = given.subscription[halt]();
        const restarting = given.subscription.start();
        await Promise.all([starting, halting, restarting]);
        await eventually(() => given.subscription.active, 5000, 'active');
        await given.send('after the race');
        await eventually(() => given.received.length === 1, 5000, 'message');
      } finally {
        await given.stop();
      }
    });
  }
});
