import {expect} from '@loopback/testlab';
import amqp from 'amqplib';
import type {Pool} from 'pg';
import {createPool} from '../../database/pg-pool';
import {parseOutboundAllow} from '../../outbound/address-policy';
import {newSigningSecret} from '../../outbound/webhook-signature';
import {AmqpConnection} from '../../queue/amqp-connection';
import {
  assertTopology,
  brokerTopology,
  DELIVERY_LIMIT,
  WEBHOOK_QUEUE,
} from '../../queue/topology';
import {WebhookConsumer} from '../../webhooks/webhook-consumer';
import {WebhookDispatcher} from '../../webhooks/webhook-dispatcher';
import {lostAfterMs, MAX_REPUBLISHES} from '../../webhooks/webhook-sweep';
import {LogCapture} from '../fixtures/log-capture';
import {resetBroker, TEST_AMQP_URL, TEST_RETRY} from '../fixtures/test-broker';
import {eventually} from '../fixtures/test-consumer';
import {sql, TEST_DATABASE_URL, truncateAll} from '../fixtures/test-database';
import {TestReceiver} from '../fixtures/test-receiver';
import {SLOW_SUITE_TIMEOUT_MS} from '../fixtures/slow-suite';

interface DeliveryRow {
  status: string;
  attempts: number;
  error: string | null;
  published: boolean;
  republished: number;
}

const LOST_AFTER = lostAfterMs(TEST_RETRY);

/**
 * The webhook queue has no dead-letter route: a message the broker hands
 * out DELIVERY_LIMIT times is dropped. Its delivery must not stay pending
 * for ever, unseen (issue 27 review).
 */
describe('Webhook deliveries whose message the broker lost', function (this: Mocha.Suite) {
  this.timeout(SLOW_SUITE_TIMEOUT_MS);
  let receiver: TestReceiver;
  let logs: LogCapture;
  let pool: Pool;
  let connection: AmqpConnection;
  let dispatcher: WebhookDispatcher;
  let consumer: WebhookConsumer | undefined;

  before(async () => {
    receiver = await TestReceiver.listen('127.0.0.2');
  });
  after(async () => receiver.close());

  beforeEach(async () => {
    receiver.calls.length = 0;
    receiver.answer = (_call, response) => response.end('ok');
    await truncateAll();
    await resetBroker();
    logs = new LogCapture();
    pool = createPool(TEST_DATABASE_URL, logs.logger);
    connection = new AmqpConnection(TEST_AMQP_URL, logs.logger, {
      onConnect: c =>
        assertTopology(() => c.createChannel(), brokerTopology(TEST_RETRY)),
      minBackoffMs: 50,
      maxBackoffMs: 200,
    });
    // Passes run on the test's word, never on a timer.
    dispatcher = new WebhookDispatcher(
      pool,
      connection,
      logs.logger,
      undefined,
      {lostAfterMs: LOST_AFTER},
    );
    await connection.start();
  });

  afterEach(async () => {
    await dispatcher.stop();
    await consumer?.stop();
    consumer = undefined;
    await connection.stop();
    await pool.end();
  });

  async function givenDelivery(): Promise<number> {
    const [user] = await sql<{id: number}>(
      `INSERT INTO app_user (email, name, password_hash, role)
       VALUES ('admin-lost@example.com', 'u', 'x', 'admin') RETURNING id`,
    );
    const [hook] = await sql<{id: number}>(
      `INSERT INTO webhook (user_id, url, events, signing_secret)
       VALUES ($1, $2, '["ping"]', $3) RETURNING id`,
      [user.id, receiver.url(), newSigningSecret()],
    );
    const [delivery] = await sql<{id: string}>(
      `INSERT INTO webhook_delivery (webhook_id, event, message_id, payload)
       VALUES ($1, 'ping', 'msg_lost', '{"type": "ping"}') RETURNING id`,
      [hook.id],
    );
    return Number(delivery.id);
  }

  const delivery = async (id: number) =>
    (
      await sql<DeliveryRow>(
        `SELECT status, attempts, error, published_at IS NOT NULL AS published,
                republished
           FROM webhook_delivery WHERE id = $1`,
        [id],
      )
    )[0];

  /** What a crash-looping or database-less consumer does: requeue until the broker drops the message. */
  async function redeliverUntilDropped(): Promise<number> {
    const raw = await amqp.connect(TEST_AMQP_URL);
    try {
      const channel = await raw.createChannel();
      let handedOut = 0;
      for (let i = 0; i < DELIVERY_LIMIT * 3; i++) {
        const message = await channel.get(WEBHOOK_QUEUE, {noAck: false});
        if (message === false) break;
        handedOut++;
        channel.nack(message, false, true);
      }
      const {messageCount} = await channel.checkQueue(WEBHOOK_QUEUE);
      expect(messageCount).to.equal(0);
      return handedOut;
    } finally {
      await raw.close();
    }
  }

  function startConsumer(): Promise<void> {
    consumer = new WebhookConsumer({
      connection,
      pool,
      retry: TEST_RETRY,
      outboundAllow: parseOutboundAllow('127.0.0.2'),
      logger: logs.logger,
      timeoutMs: 2000,
    });
    return consumer.start();
  }

  it('publishes a dropped delivery again after the sweep finds it, says so, and sends it', async () => {
    const id = await givenDelivery();
    expect(await dispatcher.dispatch()).to.equal(1);
    const handedOut = await redeliverUntilDropped();
    expect(handedOut).to.be.greaterThanOrEqual(DELIVERY_LIMIT);
    // The loss itself: the row still waits, with no message behind it.
    expect(await delivery(id)).to.containDeep({status: 'pending'});

    const later = new Date(Date.now() + LOST_AFTER + 60_000);
    await dispatcher.sweep(later);
    const swept = await delivery(id);
    expect(swept).to.containDeep({
      status: 'pending',
      published: false,
      republished: 1,
    });
    expect(swept.error).to.match(/lost the message; published again/);
    expect(logs.lines.join('\n')).to.match(
      /Webhook delivery lost by the broker; published again/,
    );

    await startConsumer();
    expect(await dispatcher.dispatch()).to.equal(1);
    const sent = await eventually(
      async () => {
        const row = await delivery(id);
        return row.status === 'succeeded' ? row : undefined;
      },
      15_000,
      'the delivery to be sent',
    );
    expect(sent.attempts).to.equal(1);
    expect(receiver.calls).to.have.length(1);
  });

  it(`fails a delivery lost ${MAX_REPUBLISHES} times more in the delivery log, with a log line`, async () => {
    const id = await givenDelivery();
    let now = Date.now();
    for (let round = 0; round <= MAX_REPUBLISHES; round++) {
      expect(await dispatcher.dispatch()).to.equal(1);
      await redeliverUntilDropped();
      now += LOST_AFTER + 60_000;
      // published_at is the database's clock: move it back instead.
      await sql(
        `UPDATE webhook_delivery SET published_at = published_at - make_interval(secs => $2)
          WHERE id = $1`,
        [id, ((round + 1) * (LOST_AFTER + 60_000)) / 1000],
      );
      await dispatcher.sweep(new Date(now));
    }
    const failed = await delivery(id);
    expect(failed).to.containDeep({status: 'failed', published: true});
    expect(failed.error).to.match(/lost the message 4 times; given up/);
    expect(logs.lines.join('\n')).to.match(
      /Webhook delivery failed: its message was lost too often/,
    );
    expect(await dispatcher.dispatch()).to.equal(0);
  });

  it('leaves alone a delivery waiting in the queue or for its retry', async () => {
    const id = await givenDelivery();
    await dispatcher.dispatch();
    await sql(
      `UPDATE webhook_delivery SET status = 'retrying', attempts = 1,
              last_attempt_at = now() WHERE id = $1`,
      [id],
    );
    await dispatcher.sweep(new Date(Date.now() + LOST_AFTER - 60_000));
    expect(await delivery(id)).to.containDeep({
      status: 'retrying',
      published: true,
      republished: 0,
      error: null,
    });
  });

  it('sends a delivery once when the dispatcher dies between the publish and marking its row', async () => {
    const id = await givenDelivery();
    // The crash: the broker confirmed the message, the marking never commits.
    const doomed = createPool(TEST_DATABASE_URL, logs.logger);
    const dying = new WebhookDispatcher(
      {
        connect: async () => {
          const client = await doomed.connect();
          const query = client.query.bind(client) as (
            ...args: unknown[]
          ) => Promise<unknown>;
          return Object.assign(client, {
            query: (...args: unknown[]) =>
              String(args[0]).includes('SET published_at')
                ? Promise.reject(new Error('killed'))
                : query(...args),
          });
        },
      } as unknown as Pool,
      connection,
      logs.logger,
    );
    await expect(dying.dispatch()).to.be.rejectedWith('killed');
    await dying.stop();
    await doomed.end();
    expect(await delivery(id)).to.containDeep({published: false});

    await startConsumer();
    await eventually(
      async () =>
        (await delivery(id)).status === 'succeeded' ? true : undefined,
      15_000,
      'the first message to be delivered',
    );
    // The outbox still holds the row: published again, and dropped as finished.
    expect(await dispatcher.dispatch()).to.equal(1);
    await eventually(
      async () => {
        const raw = await amqp.connect(TEST_AMQP_URL);
        try {
          const channel = await raw.createChannel();
          const {messageCount} = await channel.checkQueue(WEBHOOK_QUEUE);
          return messageCount === 0 ? true : undefined;
        } finally {
          await raw.close();
        }
      },
      15_000,
      'the duplicate to be consumed',
    );
    await consumer!.stop();
    consumer = undefined;
    expect(receiver.calls).to.have.length(1);
    expect(await delivery(id)).to.containDeep({
      status: 'succeeded',
      attempts: 1,
    });
  });

  it('drops the queued deliveries of a webhook deleted meanwhile, sending nothing', async () => {
    await givenDelivery();
    expect(await dispatcher.dispatch()).to.equal(1);
    await sql(`DELETE FROM webhook`);
    await startConsumer();
    await eventually(
      async () => {
        const raw = await amqp.connect(TEST_AMQP_URL);
        try {
          const channel = await raw.createChannel();
          const {messageCount} = await channel.checkQueue(WEBHOOK_QUEUE);
          return messageCount === 0 ? true : undefined;
        } finally {
          await raw.close();
        }
      },
      15_000,
      'the orphan message to be consumed',
    );
    await consumer!.stop();
    consumer = undefined;
    expect(receiver.calls).to.have.length(0);
    expect(logs.lines.join('\n')).to.not.match(/not handled; requeued/);
  });
});
