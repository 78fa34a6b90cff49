import type {ConfirmChannel} from 'amqplib';
import type {Pool, PoolClient} from 'pg';
import {setTimeout as sleep} from 'node:timers/promises';
import {publishConfirmed} from '../consumer/confirmed-publish';
import {requeueWithinDeliveryLimit} from '../consumer/delivery-limit-round';
import {Delivery} from '../consumer/delivery';
import {RETRY_COUNT_HEADER, retryCountOf} from '../consumer/retry-count';
import {Subscription} from '../consumer/subscription';
import type {Logger} from '../logging/logger';
import type {OutboundAllow} from '../outbound/address-policy';
import {
  OutboundRefused,
  OutboundTimedOut,
  sendOutbound,
} from '../outbound/outbound-request';
import {webhookHeaders} from '../outbound/webhook-signature';
import type {AmqpConnection} from '../queue/amqp-connection';
import {
  DEAD_LETTER_EXCHANGE,
  RetrySettings,
  WEBHOOK_QUEUE,
  webhookRetryTier,
} from '../queue/topology';
import {inTransaction} from '../database/in-transaction';
import {disableWebhook} from './webhook-disabling';
import {
  MAX_CONSECUTIVE_FAILURES,
  PING_EVENT,
  WEBHOOK_TIMEOUT_MS,
} from './webhook-events';

export interface WebhookConsumerOptions {
  connection: AmqpConnection;
  pool: Pool;
  retry: RetrySettings;
  outboundAllow: OutboundAllow;
  logger: Logger;
  /** Deliveries sent at once by this consumer. */
  prefetch?: number;
  timeoutMs?: number;
  clock?: () => Date;
}

/**
 * Deliveries of one owner's webhooks one consumer sends at once; the
 * owner's others go, unattempted, to the back of the queue and come back.
 * Without it, one operator's 30 webhooks to an endpoint that never answers
 * took every prefetch slot, and everyone else's deliveries waited behind
 * them (an admin's for 30 s, growing with each event).
 */
export const OWNER_IN_FLIGHT_MAX = 3;

/** How long a deferred delivery waits before it goes to the back of the queue. */
export const DEFER_PAUSE_MS = 250;

interface DeliveryRow {
  id: string;
  webhook_id: number;
  owner_id: number;
  event: string;
  message_id: string;
  payload: object;
  status: string;
  attempts: number;
  url: string;
  active: boolean;
  signing_secret: string;
  previous_signing_secret: string | null;
  previous_secret_expires_at: Date | null;
}

/** What one attempt came to. */
type Outcome =
  | {kind: 'succeeded'; status: number}
  | {kind: 'gone'; status: number}
  | {kind: 'failed'; status: number | null; error: string};

const FINISHED = new Set(['succeeded', 'failed', 'cancelled']);

/**
 * Consumes `cron_scheduler_webhooks`: sends one delivery per message
 * through the SSRF guard, signed the Standard Webhooks way with the
 * endpoint's secret(s) and the delivery's own webhook-id (the same on every
 * attempt). A failure with retries left is republished to the webhook
 * retry tier of the task retry delays and acked once the broker confirmed
 * it; a 410 disables the endpoint at once; the last failure counts towards
 * MAX_CONSECUTIVE_FAILURES. Every attempt is written to the delivery log.
 * Neither the URL's path and query nor a secret is ever logged.
 */
export class WebhookConsumer {
  readonly subscription: Subscription<ConfirmChannel>;
  private readonly clock: () => Date;
  private inFlight = new Set<Promise<void>>();
  /** Owner → deliveries of their webhooks being sent now (see OWNER_IN_FLIGHT_MAX). */
  private readonly sendingFor = new Map<number, number>();

  constructor(private readonly options: WebhookConsumerOptions) {
    this.clock = options.clock ?? (() => new Date());
    this.subscription = new Subscription({
      queue: WEBHOOK_QUEUE,
      connection: options.connection,
      logger: options.logger,
      openChannel: connection => connection.createConfirmChannel(),
      consume: async channel => {
        await channel.prefetch(options.prefetch ?? 10);
        const {consumerTag} = await channel.consume(WEBHOOK_QUEUE, message => {
          if (!message) return this.subscription.lost(channel);
          const handled = this.handle(
            channel,
            new Delivery(channel, message),
          ).finally(() => this.inFlight.delete(handled));
          this.inFlight.add(handled);
        });
        return consumerTag;
      },
    });
  }

  get consuming(): boolean {
    return this.subscription.active;
  }

  async start(): Promise<void> {
    await this.subscription.start();
  }

  async stop(): Promise<void> {
    await this.subscription.cancel();
    await Promise.allSettled([...this.inFlight]);
    await this.subscription.close();
  }

  private async handle(
    channel: ConfirmChannel,
    delivery: Delivery,
  ): Promise<void> {
    try {
      await this.process(channel, delivery);
    } catch (error) {
      if (delivery.settled) return;
      // Database or broker trouble: offered again after a pause, never hot.
      this.options.logger.warn('Webhook delivery not handled; requeued', {
        error: (error as Error).message,
      });
      await sleep(1000);
      await requeueWithinDeliveryLimit(
        channel,
        delivery,
        webhookRetryTier(1, this.options.retry),
        this.options.logger,
        this.subscription.isLive(channel),
      );
    }
  }

  private async process(
    channel: ConfirmChannel,
    delivery: Delivery,
  ): Promise<void> {
    const {message} = delivery;
    const deliveryId = Number(
      (JSON.parse(message.content.toString('utf8')) as {delivery_id?: unknown})
        .delivery_id,
    );
    const {pool, logger} = this.options;
    const {rows} = await pool.query<DeliveryRow>(
      `SELECT d.id, d.webhook_id, w.user_id AS owner_id, d.event, d.message_id,
              d.payload, d.status, d.attempts, w.url, w.active, w.signing_secret, w.previous_signing_secret,
              w.previous_secret_expires_at
         FROM webhook_delivery d JOIN webhook w ON w.id = d.webhook_id
        WHERE d.id = $1`,
      [Number.isSafeInteger(deliveryId) ? deliveryId : 0],
    );
    const row = rows[0];
    // Gone with its endpoint, or already finished (a duplicate message).
    if (!row || FINISHED.has(row.status)) {
      delivery.ack();
      return;
    }
    const ping = row.event === PING_EVENT;
    if (!row.active && !ping) {
      await pool.query(
        `UPDATE webhook_delivery SET status = 'cancelled', finished_at = now(),
                error = 'the webhook was disabled before this delivery was sent'
          WHERE id = $1`,
        [row.id],
      );
      delivery.ack();
      return;
    }
    // The row's attempts too: a delivery the sweep published again comes
    // without the retry header, and must not start its retries over.
    const retryCount = Math.max(
      retryCountOf(message.properties.headers),
      row.attempts,
    );
    // Pings too: queued without limit, they held every slot just the same.
    if (!this.takeOwnerTurn(row.owner_id)) {
      await this.defer(channel, delivery);
      return;
    }
    let outcome: Outcome;
    try {
      outcome = await this.send(row);
    } finally {
      this.endOwnerTurn(row.owner_id);
    }
    const log = logger.child({
      webhook_id: row.webhook_id,
      delivery_id: Number(row.id),
      event: row.event,
      attempt: retryCount + 1,
      host: safeHost(row.url),
    });
    if (outcome.kind === 'succeeded') {
      await this.recordOutcome(
        row,
        'succeeded',
        outcome.status,
        null,
        async client => {
          if (ping) return;
          await client.query(
            `UPDATE webhook SET consecutive_failures = 0
              WHERE id = $1 AND consecutive_failures <> 0`,
            [row.webhook_id],
          );
        },
      );
      log.info('Webhook delivered', {status_code: outcome.status});
      delivery.ack();
      return;
    }
    if (outcome.kind === 'gone') {
      await this.recordOutcome(
        row,
        'failed',
        outcome.status,
        '410 Gone',
        async client => {
          if (ping) return;
          await disableWebhook(
            client,
            row.webhook_id,
            'the endpoint answered 410 Gone',
          );
        },
      );
      if (!ping) log.warn('Webhook disabled: the endpoint answered 410 Gone');
      delivery.ack();
      return;
    }
    const {retry} = this.options;
    if (!ping && retryCount < retry.maxRetries) {
      const tier = webhookRetryTier(retryCount + 1, retry);
      await publishConfirmed(
        channel,
        DEAD_LETTER_EXCHANGE,
        tier.routingKey,
        message.content,
        {
          ...message.properties,
          headers: {
            ...message.properties.headers,
            [RETRY_COUNT_HEADER]: retryCount + 1,
          },
        },
      );
      await this.attempted(row, 'retrying', outcome.status, outcome.error);
      log.warn(
        `Webhook delivery failed; retry ${tier.retry} in ${tier.delayMs}ms`,
        {
          status_code: outcome.status,
          error: outcome.error,
        },
      );
      delivery.ack();
      return;
    }
    const failures = await this.recordOutcome(
      row,
      'failed',
      outcome.status,
      outcome.error,
      client =>
        ping
          ? Promise.resolve(undefined)
          : countFailure(client, row.webhook_id),
    );
    log.warn('Webhook delivery failed after its last retry', {
      status_code: outcome.status,
      error: outcome.error,
    });
    if (failures?.disabled) {
      log.warn('Webhook disabled after failures in a row', {
        failures: failures.count,
      });
    }
    delivery.ack();
  }

  private takeOwnerTurn(ownerId: number): boolean {
    const sending = this.sendingFor.get(ownerId) ?? 0;
    if (sending >= OWNER_IN_FLIGHT_MAX) return false;
    this.sendingFor.set(ownerId, sending + 1);
    return true;
  }

  private endOwnerTurn(ownerId: number): void {
    const sending = (this.sendingFor.get(ownerId) ?? 1) - 1;
    if (sending > 0) this.sendingFor.set(ownerId, sending);
    else this.sendingFor.delete(ownerId);
  }

  /**
   * After DEFER_PAUSE_MS, sends the message to the back of the webhook queue
   * as it is (its retry count unchanged: no attempt was made) and acks it
   * once the broker confirmed: it comes round again behind the others'
   * deliveries. The pause keeps a busy owner's deliveries from circling
   * hot; a retry tier's delay (30 s by default) held an owner's fourth
   * webhook that long even when every endpoint answered at once.
   */
  private async defer(
    channel: ConfirmChannel,
    delivery: Delivery,
  ): Promise<void> {
    const {message} = delivery;
    await sleep(DEFER_PAUSE_MS);
    await publishConfirmed(
      channel,
      '',
      WEBHOOK_QUEUE,
      message.content,
      message.properties,
    );
    this.options.logger.debug(
      "Webhook delivery deferred: its owner's webhooks already take their share",
      {share: OWNER_IN_FLIGHT_MAX},
    );
    delivery.ack();
  }

  /** One attempt: the body is the stored payload, signed with every live secret. */
  private async send(row: DeliveryRow): Promise<Outcome> {
    const now = this.clock();
    const body = JSON.stringify(row.payload);
    const secrets = [
      row.signing_secret,
      ...(row.previous_signing_secret &&
      row.previous_secret_expires_at &&
      row.previous_secret_expires_at.getTime() > now.getTime()
        ? [row.previous_signing_secret]
        : []),
    ];
    try {
      const response = await sendOutbound(
        {
          url: row.url,
          method: 'POST',
          headers: {
            'user-agent': 'task-scheduler-webhooks',
            'content-type': 'application/json',
            ...webhookHeaders(secrets, row.message_id, now, body),
          },
          body,
          timeoutMs: this.options.timeoutMs ?? WEBHOOK_TIMEOUT_MS,
          maxResponseBytes: 64 * 1024,
        },
        this.options.outboundAllow,
      );
      const status = response.status;
      if (status === 410) return {kind: 'gone', status};
      if (status >= 200 && status < 300) return {kind: 'succeeded', status};
      return {
        kind: 'failed',
        status,
        error:
          status >= 300 && status < 400
            ? `HTTP ${status}: redirects are not followed`
            : `HTTP ${status}`,
      };
    } catch (error) {
      if (
        error instanceof OutboundRefused ||
        error instanceof OutboundTimedOut
      ) {
        return {kind: 'failed', status: null, error: error.message};
      }
      return {
        kind: 'failed',
        status: null,
        error: `request failed: ${(error as Error).message}`,
      };
    }
  }

  private async attempted(
    row: DeliveryRow,
    status: 'retrying',
    code: number | null,
    error: string | null,
  ): Promise<void> {
    await this.options.pool.query(
      `UPDATE webhook_delivery
          SET status = $2, attempts = attempts + 1, status_code = $3,
              error = $4, last_attempt_at = now()
        WHERE id = $1`,
      [row.id, status, code, error?.slice(0, 2000) ?? null],
    );
  }

  /**
   * Records a delivery's final outcome and, in the same transaction, what it
   * does to its endpoint (`then`): a process killed between the two used to
   * leave the delivery finished and its endpoint untouched for good, since a
   * finished delivery's redelivery is only acknowledged. The owner's and the
   * endpoint's rows are taken first (lockOwnerAndEndpoint).
   */
  private recordOutcome<T>(
    row: DeliveryRow,
    status: 'succeeded' | 'failed',
    code: number | null,
    error: string | null,
    then: (client: PoolClient) => Promise<T>,
  ): Promise<T> {
    return inTransaction(this.options.pool, async client => {
      await lockOwnerAndEndpoint(client, row);
      await client.query(
        `UPDATE webhook_delivery
          SET status = $2, attempts = attempts + 1, status_code = $3,
              error = $4, last_attempt_at = now(), finished_at = now()
        WHERE id = $1`,
        [row.id, status, code, error?.slice(0, 2000) ?? null],
      );
      return then(client);
    });
  }
}

/**
 * Takes the owner's row, then the endpoint's, before the delivery's: the
 * order a DELETE of the owner (the user, then its webhooks, then their
 * deliveries, through the cascades) or of the webhook takes them. The
 * other order deadlocked with such a DELETE: the delivery's row was taken
 * first, and disabling the endpoint takes the owner's row too (its
 * notice's foreign key). KEY SHARE: other deliveries of the endpoint and a
 * PATCH of either row still go ahead.
 */
async function lockOwnerAndEndpoint(
  client: PoolClient,
  row: DeliveryRow,
): Promise<void> {
  await client.query(`SELECT 1 FROM app_user WHERE id = $1 FOR KEY SHARE`, [
    row.owner_id,
  ]);
  await client.query(`SELECT 1 FROM webhook WHERE id = $1 FOR KEY SHARE`, [
    row.webhook_id,
  ]);
}

/**
 * A delivery failed for good: counted, and the MAX_CONSECUTIVE_FAILURES-th
 * in a row disables the endpoint. The endpoint's failures in a row, or
 * undefined when it was no longer active.
 */
async function countFailure(
  client: PoolClient,
  webhookId: number,
): Promise<{count: number; disabled: boolean} | undefined> {
  const {rows} = await client.query<{consecutive_failures: number}>(
    `UPDATE webhook SET consecutive_failures = consecutive_failures + 1
      WHERE id = $1 AND active RETURNING consecutive_failures`,
    [webhookId],
  );
  if (rows.length === 0) return undefined;
  const count = rows[0].consecutive_failures;
  const disabled =
    count >= MAX_CONSECUTIVE_FAILURES &&
    (await disableWebhook(
      client,
      webhookId,
      `${MAX_CONSECUTIVE_FAILURES} deliveries failed in a row`,
    ));
  return {count, disabled};
}

/** The host alone: a URL's path and query may carry tokens. */
function safeHost(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '(invalid URL)';
  }
}
