import {expect} from '@loopback/testlab';
import amqp, {ConfirmChannel, ConsumeMessage} from 'amqplib';
import {Pool} from 'pg';
import {Delivery} from '../../consumer/delivery';
import {
  DELIVERY_COUNT_HEADER,
  deliveryCountOf,
  requeueWithinDeliveryLimit,
  ROUND_AFTER_DELIVERIES,
} from '../../consumer/delivery-limit-round';
import {RETRY_COUNT_HEADER} from '../../consumer/retry-count';
import {
  assertTopology,
  brokerTopology,
  DELIVERY_LIMIT,
  RETRY_QUEUE,
  retryTier,
  RetryTier,
  TASK_QUEUE,
  WEBHOOK_QUEUE,
  webhookRetryTier,
} from '../../queue/topology';
import {parseOutboundAllow} from '../../outbound/address-policy';
import {AmqpConnection} from '../../queue/amqp-connection';
import {WebhookConsumer} from '../../webhooks/webhook-consumer';
import {LogCapture} from '../fixtures/log-capture';
import {
  drainQueue,
  resetBroker,
  TEST_AMQP_URL,
  TEST_RETRY,
} from '../fixtures/test-broker';
import {eventually} from '../fixtures/test-consumer';

/**
 * The quorum queues' delivery limit on the real broker: past it RabbitMQ
 * holds a task queue's message in cron_scheduler_retry for ever (its way
 * back is a dead-letter cycle) and drops a webhook queue's (no dead-letter
 * exchange). A requeue near the limit goes round through a retry tier.
 */
describe('requeues near the delivery limit (quorum queues)', () => {
  let connection: Awaited<ReturnType<typeof amqp.connect>>;
  let channel: ConfirmChannel;
  let logs: LogCapture;

  beforeEach(async () => {
    logs = new LogCapture();
    await resetBroker();
    connection = await amqp.connect(TEST_AMQP_URL);
    await assertTopology(
      () => connection.createChannel(),
      brokerTopology(TEST_RETRY),
    );
    channel = await connection.createConfirmChannel();
    await channel.prefetch(1);
  });
  afterEach(async () => {
    await connection.close();
    await resetBroker();
  });

  /** Publishes one message to `queue`, requeues it `times` times, and hands over its next delivery. */
  async function deliveredAfterRequeues(
    queue: string,
    times: number,
  ): Promise<ConsumeMessage> {
    channel.sendToQueue(queue, Buffer.from('{"delivery_id":1}'), {
      persistent: true,
      headers: {'x-execution-id': 7},
    });
    await channel.waitForConfirms();
    let seen = 0;
    return new Promise<ConsumeMessage>((resolve, reject) => {
      channel
        .consume(queue, message => {
          if (!message) return;
          if (seen++ < times) {
            channel.nack(message, false, true);
            return;
          }
          channel
            .cancel(message.fields.consumerTag)
            .then(() => resolve(message), reject);
        })
        .catch(reject);
    });
  }

  /** The message `queue` holds next, taken and acked, or undefined within `ms`. */
  async function nextIn(queue: string, ms: number) {
    return eventually(
      async () => (await drainQueue(queue))[0] ?? undefined,
      ms,
      `a message in ${queue}`,
    ).catch(() => undefined);
  }

  const cases: Array<{queue: string; round: RetryTier; lostTo: string}> = [
    {queue: TASK_QUEUE, round: retryTier(1, TEST_RETRY), lostTo: RETRY_QUEUE},
    {
      queue: WEBHOOK_QUEUE,
      round: webhookRetryTier(1, TEST_RETRY),
      lostTo: 'nowhere',
    },
  ];
  for (const {queue, round, lostTo} of cases) {
    it(`${queue}: a message requeued past the limit does not come back (held in ${lostTo})`, async () => {
      const message = await deliveredAfterRequeues(queue, DELIVERY_LIMIT);
      expect(message.properties.headers?.[DELIVERY_COUNT_HEADER]).to.equal(
        DELIVERY_LIMIT,
      );
      channel.nack(message, false, true);
      expect(await nextIn(queue, 2000)).to.be.undefined();
    });

    it(`${queue}: near the limit the requeue goes round through ${round.queue} and comes back, no retry spent`, async () => {
      const message = await deliveredAfterRequeues(
        queue,
        ROUND_AFTER_DELIVERIES,
      );
      await requeueWithinDeliveryLimit(
        channel,
        new Delivery(channel, message),
        round,
        logs.logger,
        true,
      );
      const back = await nextIn(queue, 5000);
      expect(back).to.not.be.undefined();
      expect(back!.content.toString()).to.equal('{"delivery_id":1}');
      expect(back!.properties.headers).to.containDeep({
        'x-execution-id': 7,
        [RETRY_COUNT_HEADER]: 0,
      });
      // A new message: the broker counts its deliveries from nothing.
      expect(deliveryCountOf(back!.properties.headers)).to.equal(0);
      expect(
        logs.find(
          "Requeued through the delay queue: its deliveries reached the broker's limit",
          {delivery_count: ROUND_AFTER_DELIVERIES},
        ),
      ).to.have.length(1);
    });
  }

  it('declares the round tiers even without retries (CRON_MAX_RETRIES=0; second review: NO_ROUTE)', () => {
    const settings = {...TEST_RETRY, maxRetries: 0};
    const queues = brokerTopology(settings).queues.map(queue => queue.name);
    expect(queues).to.containEql(retryTier(1, settings).queue);
    expect(queues).to.containEql(webhookRetryTier(1, settings).queue);
  });

  it('does not believe a delivery count its publisher wrote: a first delivery is requeued plainly', async () => {
    channel.sendToQueue(TASK_QUEUE, Buffer.from('{}'), {
      headers: {[DELIVERY_COUNT_HEADER]: DELIVERY_LIMIT - 1},
    });
    await channel.waitForConfirms();
    const first = await new Promise<ConsumeMessage>((resolve, reject) => {
      channel
        .consume(TASK_QUEUE, message => {
          if (!message) return;
          channel
            .cancel(message.fields.consumerTag)
            .then(() => resolve(message), reject);
        })
        .catch(reject);
    });
    expect(first.fields.redelivered).to.be.false();
    await requeueWithinDeliveryLimit(
      channel,
      new Delivery(channel, first),
      retryTier(1, TEST_RETRY),
      logs.logger,
      true,
    );
    const back = await nextIn(TASK_QUEUE, 2000);
    expect(back?.fields.redelivered).to.be.true();
    expect(
      logs.find(
        "Requeued through the delay queue: its deliveries reached the broker's limit",
      ),
    ).to.have.length(0);
  });

  it('below the round threshold a requeue is a plain requeue', async () => {
    const message = await deliveredAfterRequeues(TASK_QUEUE, 3);
    await requeueWithinDeliveryLimit(
      channel,
      new Delivery(channel, message),
      retryTier(1, TEST_RETRY),
      logs.logger,
      true,
    );
    const back = await nextIn(TASK_QUEUE, 2000);
    expect(back?.properties.headers?.[RETRY_COUNT_HEADER]).to.be.undefined();
    expect(back?.fields.redelivered).to.be.true();
  });

  it("the webhook consumer's own requeue goes round near the limit, and the delivery is not dropped", async () => {
    // Near the limit already: one more plain requeue, then the consumer's.
    const message = await deliveredAfterRequeues(
      WEBHOOK_QUEUE,
      ROUND_AFTER_DELIVERIES,
    );
    channel.nack(message, false, true);
    // A database that refuses every connection: each delivery is "not handled".
    const refusing = new Pool({
      connectionString: 'postgres://postgres@127.0.0.1:1/none',
      connectionTimeoutMillis: 1000,
    });
    const broker = new AmqpConnection(TEST_AMQP_URL, logs.logger, {
      minBackoffMs: 50,
      maxBackoffMs: 200,
    });
    await broker.start();
    const consumer = new WebhookConsumer({
      connection: broker,
      pool: refusing,
      retry: TEST_RETRY,
      outboundAllow: parseOutboundAllow('127.0.0.2'),
      logger: logs.logger,
    });
    const round = () =>
      logs.find(
        "Requeued through the delay queue: its deliveries reached the broker's limit",
        {
          delivery_count: ROUND_AFTER_DELIVERIES + 1,
          delay_ms: webhookRetryTier(1, TEST_RETRY).delayMs,
        },
      );
    try {
      await consumer.start();
      await eventually(() => round().length === 1, 10_000, 'the round');
      // The copy came back from the delay queue and was tried again.
      await eventually(
        () => logs.find('Webhook delivery not handled; requeued').length >= 2,
        10_000,
        'the copy tried again',
      );
    } finally {
      await consumer.stop();
      await broker.stop();
      await refusing.end();
    }
    expect(round()).to.have.length(1);
    const left = await eventually(
      async () => (await drainQueue(WEBHOOK_QUEUE))[0],
      5000,
      'the delivery back in its queue',
    );
    expect(left.content.toString()).to.equal('{"delivery_id":1}');
  });
});
