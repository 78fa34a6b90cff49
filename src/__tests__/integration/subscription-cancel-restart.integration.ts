import {expect} from '@loopback/testlab';
import type {Channel, ConsumeMessage} from 'amqplib';
import {Subscription} from '../../consumer/subscription';
import {AmqpConnection} from '../../queue/amqp-connection';
import {LogCapture} from '../fixtures/log-capture';
import {TEST_AMQP_URL, withChannel} from '../fixtures/test-broker';
import {eventually} from '../fixtures/test-consumer';

const QUEUE = 'subscription_cancel_restart';

/**
 * Sends `body` to QUEUE on a channel of its own. The round trip after it
 * on the same channel returns once the broker has taken the message: the
 * connection's close may otherwise leave before the publish.
 */
const send = (body: string) =>
  withChannel(async channel => {
    channel.sendToQueue(QUEUE, Buffer.from(body));
    await channel.checkQueue(QUEUE);
  });

/**
 * Noticed in a review and left alone then: `cancel()` kept its channel (to
 * settle the deliveries in hand) and `start()` found that channel current,
 * so it took it for subscribed and registered no consumer. A consumer
 * stopped and started again stayed up and ready, consuming nothing.
 */
describe('consumer subscription: cancelled, then started again', () => {
  const logs = new LogCapture();
  let connection: AmqpConnection;
  let subscription: Subscription<Channel>;
  const received: string[] = [];
  let opened = 0;

  before(async () => {
    await withChannel(async channel => {
      await channel.deleteQueue(QUEUE);
      await channel.assertQueue(QUEUE, {durable: false});
    });
    connection = new AmqpConnection(TEST_AMQP_URL, logs.logger, {
      minBackoffMs: 20,
      maxBackoffMs: 100,
    });
    await connection.start();
    subscription = new Subscription<Channel>({
      queue: QUEUE,
      connection,
      logger: logs.logger,
      openChannel: async opening => {
        opened++;
        return opening.createChannel();
      },
      consume: async channel => {
        await channel.prefetch(1);
        const {consumerTag} = await channel.consume(
          QUEUE,
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
  });
  after(async () => {
    await subscription.close();
    await connection.stop();
    await withChannel(channel => channel.deleteQueue(QUEUE));
  });

  it('consumes again on the channel it kept', async () => {
    await subscription.start();
    await send('before the cancel');
    await eventually(() => received.length === 1, 5000, 'the first message');

    await subscription.cancel();
    expect(subscription.active).to.be.false();
    await send('while cancelled');
    // Held by the queue, not handed to the cancelled consumer.
    await eventually(
      async () =>
        (await withChannel(channel => channel.checkQueue(QUEUE)))
          .messageCount === 1,
      5000,
      'the message waiting in the queue',
    );
    expect(received).to.deepEqual(['before the cancel']);

    await subscription.start();
    expect(subscription.active).to.be.true();
    await eventually(() => received.length === 2, 5000, 'the held message');
    expect(received).to.deepEqual(['before the cancel', 'while cancelled']);
    // The kept channel took it: no second channel was opened.
    expect(opened).to.equal(1);
    expect(logs.find('Consuming', {queue: QUEUE})).to.have.length(2);
  });
});
