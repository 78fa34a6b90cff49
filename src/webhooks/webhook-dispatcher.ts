import type {ConfirmChannel} from 'amqplib';
import type {Pool} from 'pg';
import {publishConfirmed} from '../consumer/confirmed-publish';
import type {Logger} from '../logging/logger';
import type {AmqpConnection} from '../queue/amqp-connection';
import {WEBHOOK_QUEUE} from '../queue/topology';
import {sweepLostDeliveries, WEBHOOK_SWEEP_MS} from './webhook-sweep';
import {closeQuietly} from '../queue/close-quietly';

/** How often the consumer role publishes the deliveries the outbox holds. */
export const WEBHOOK_DISPATCH_MS = 500;
const BATCH = 500;

/** The message of one delivery: only its id; the row holds the rest. */
export interface WebhookDeliveryMessage {
  delivery_id: number;
}

/** The lost-message sweep the dispatcher's timer also runs. */
export interface LostDeliverySweep {
  /** How long a published delivery may go unattempted: lostAfterMs(). */
  lostAfterMs: number;
  everyMs?: number;
  clock?: () => Date;
}

/**
 * Moves delivery rows from the outbox (published_at empty) to the webhook
 * queue: each message confirmed by the broker before its row is marked, in
 * one transaction that holds the rows (SKIP LOCKED, so several consumers
 * share the work). A crash between the confirm and the commit publishes a
 * row twice; the consumer sends a finished delivery no more (at least once).
 */
export class WebhookDispatcher {
  private channel?: Promise<ConfirmChannel>;
  private timer?: NodeJS.Timeout;
  private running?: Promise<unknown>;
  private lastSweep?: Date;

  constructor(
    private readonly pool: Pool,
    private readonly connection: AmqpConnection,
    private readonly logger: Logger,
    private readonly everyMs = WEBHOOK_DISPATCH_MS,
    private readonly lost?: LostDeliverySweep,
  ) {
    connection.on('disconnected', () => (this.channel = undefined));
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      this.running ??= this.pass()
        .catch(error =>
          this.logger.warn('Webhook dispatch failed; retried next pass', {
            error: (error as Error).message,
          }),
        )
        .finally(() => (this.running = undefined));
    }, this.everyMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
    const channel = this.channel;
    this.channel = undefined;
    const opened = await channel?.catch(() => undefined);
    if (opened) await closeQuietly(opened);
  }

  /** Publishes the outbox; now and then also sweeps for lost deliveries. */
  private async pass(): Promise<void> {
    if (this.lost) {
      const now = (this.lost.clock ?? (() => new Date()))();
      const every = this.lost.everyMs ?? WEBHOOK_SWEEP_MS;
      if (
        !this.lastSweep ||
        now.getTime() - this.lastSweep.getTime() >= every
      ) {
        this.lastSweep = now;
        await this.sweep(now);
      }
    }
    await this.dispatch();
  }

  /**
   * Puts deliveries whose message the broker lost back in the outbox (or
   * fails them after a few times): see sweepLostDeliveries.
   */
  async sweep(now: Date): Promise<void> {
    if (!this.lost) return;
    await sweepLostDeliveries(
      this.pool,
      this.logger,
      now,
      this.lost.lostAfterMs,
    );
  }

  /** One pass; resolves with the number of deliveries published. */
  async dispatch(): Promise<number> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const {rows} = await client.query<{id: string}>(
        `SELECT id FROM webhook_delivery WHERE published_at IS NULL
          ORDER BY id LIMIT ${BATCH} FOR UPDATE SKIP LOCKED`,
      );
      if (rows.length === 0) {
        await client.query('COMMIT');
        return 0;
      }
      const channel = await this.openChannel();
      const published: number[] = [];
      for (const row of rows) {
        const message: WebhookDeliveryMessage = {delivery_id: Number(row.id)};
        await publishConfirmed(
          channel,
          '',
          WEBHOOK_QUEUE,
          Buffer.from(JSON.stringify(message)),
          {contentType: 'application/json', messageId: `webhook-${row.id}`},
        );
        published.push(Number(row.id));
      }
      await client.query(
        `UPDATE webhook_delivery SET published_at = now() WHERE id = ANY($1::bigint[])`,
        [published],
      );
      await client.query('COMMIT');
      return published.length;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  private openChannel(): Promise<ConfirmChannel> {
    if (!this.channel) {
      const opening = this.connection.createConfirmChannel().then(channel => {
        channel.on('error', error =>
          this.logger.warn('Webhook publish channel error', {
            error: error.message,
          }),
        );
        channel.on('close', () => {
          if (this.channel === opening) this.channel = undefined;
        });
        return channel;
      });
      opening.catch(() => {
        if (this.channel === opening) this.channel = undefined;
      });
      this.channel = opening;
    }
    return this.channel;
  }
}
