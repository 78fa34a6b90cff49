import type {Channel} from 'amqplib';
import type {Logger} from '../logging/logger';
import type {AmqpConnection} from '../queue/amqp-connection';
import {closeQuietly} from '../queue/close-quietly';

export interface SubscriptionOptions<C extends Channel> {
  /** Names the queue in logs. */
  queue: string;
  connection: AmqpConnection;
  logger: Logger;
  /** Opens the channel (plain or confirm). */
  openChannel: (connection: AmqpConnection) => Promise<C>;
  /** Sets prefetch and starts consuming; resolves with the consumer tag. */
  consume: (channel: C) => Promise<string>;
  /** The channel closed while subscribed (its unacked deliveries go back to the queue). */
  onChannelClosed?: (channel: C) => void;
  minBackoffMs?: number;
  maxBackoffMs?: number;
}

/**
 * Keeps one consumer subscribed to a queue for as long as it is not stopped:
 * on a new connection, and after any channel-level close (406 on a bad ack,
 * the broker's consumer timeout, a cancel when the queue went away), it opens
 * a new channel with capped exponential backoff. Without this a consumer
 * could stay alive and ready while consuming nothing.
 */
export class Subscription<C extends Channel> {
  private current?: C;
  private consumerTag?: string;
  private stopped = true;
  private attempt = 0;
  private timer?: NodeJS.Timeout;
  private subscribing?: Promise<void>;
  private openedAt = 0;
  /** Bumped by every start(), cancel() and close(): the latest call wins. */
  private generation = 0;

  constructor(private readonly options: SubscriptionOptions<C>) {
    options.connection.on('connected', () => {
      this.attempt = 0;
      this.subscribe().catch(() => undefined);
    });
  }

  /** The channel deliveries come from now, if subscribed. */
  get channel(): C | undefined {
    return this.current;
  }

  /** True while a consumer is registered on a live channel. */
  get active(): boolean {
    return !this.stopped && !!this.current && !!this.consumerTag;
  }

  /** True if deliveries of `channel` may still be started. */
  isLive(channel: Channel): boolean {
    return !this.stopped && channel === this.current;
  }

  /** Subscribes now if connected; otherwise on the next connect. */
  async start(): Promise<void> {
    this.generation++;
    this.stopped = false;
    if (this.options.connection.connected) await this.subscribe();
  }

  /**
   * Stops taking deliveries; the channel stays open to settle those in
   * hand, and a later start() consumes on it again.
   */
  async cancel(): Promise<void> {
    await this.halt(false);
  }

  /** Cancels, then closes the channel. */
  async close(): Promise<void> {
    await this.halt(true);
  }

  private async halt(closing: boolean): Promise<void> {
    const generation = ++this.generation;
    this.stopped = true;
    clearTimeout(this.timer);
    await this.subscribing;
    // A start() while the subscription under way ended found it as it was
    // and kept it: cancelling now would leave it started, consuming nothing.
    if (generation !== this.generation) return;
    const channel = this.current;
    const consumerTag = this.consumerTag;
    // Forgotten before the broker answers: a start() meanwhile consumes anew.
    this.consumerTag = undefined;
    if (closing) this.current = undefined;
    if (channel && consumerTag) {
      await channel.cancel(consumerTag).catch(() => undefined);
    }
    if (closing && channel) await closeQuietly(channel);
  }

  /** One subscription at a time: start(), 'connected' and a retry may all ask. */
  private subscribe(): Promise<void> {
    if (this.stopped || (this.current && this.consumerTag)) {
      return Promise.resolve();
    }
    // A channel kept by cancel() (or one whose consume is under way, which
    // `subscribing` already holds) is consumed on again, not replaced.
    const kept = this.current;
    this.subscribing ??= (kept ? this.consumeOn(kept) : this.open())
      .catch(error => {
        this.options.logger.error('Could not consume', {
          queue: this.options.queue,
          error: (error as Error).message,
        });
        this.retryLater();
      })
      .finally(() => {
        this.subscribing = undefined;
      });
    return this.subscribing;
  }

  private async open(): Promise<void> {
    const {options} = this;
    const channel = await options.openChannel(options.connection);
    channel.on('error', error =>
      options.logger.warn('Consumer channel error', {
        queue: options.queue,
        error: error.message,
      }),
    );
    channel.on('close', () => this.closed(channel));
    this.current = channel;
    this.consumerTag = undefined;
    this.openedAt = Date.now();
    try {
      await this.consumeOn(channel);
    } catch (error) {
      // Let the channel go here, not only in its 'close' handler: amqplib
      // may have closed it before that handler existed (its last reply and
      // a frame that closes the connection in one read), and a channel kept
      // as current would make every later attempt think it is subscribed.
      if (this.current === channel) {
        this.current = undefined;
        this.consumerTag = undefined;
      }
      await closeQuietly(channel);
      throw error;
    }
  }

  /** Registers the consumer on `channel`; cancels it again if stopped meanwhile. */
  private async consumeOn(channel: C): Promise<void> {
    const consumerTag = await this.options.consume(channel);
    if (this.stopped || channel !== this.current) {
      await channel.cancel(consumerTag).catch(() => undefined);
      return;
    }
    this.consumerTag = consumerTag;
    this.options.logger.info('Consuming', {queue: this.options.queue});
  }

  /** The broker cancelled the consumer (queue deleted): start over on a new channel. */
  lost(channel: C): void {
    if (channel !== this.current) return;
    this.options.logger.warn('Consumer cancelled by the broker', {
      queue: this.options.queue,
    });
    channel.close().catch(() => undefined);
  }

  private closed(channel: C): void {
    if (channel !== this.current) return;
    this.current = undefined;
    this.consumerTag = undefined;
    // A channel that lived longer than the longest wait starts the backoff over.
    if (Date.now() - this.openedAt > (this.options.maxBackoffMs ?? 10_000)) {
      this.attempt = 0;
    }
    this.options.onChannelClosed?.(channel);
    this.retryLater();
  }

  private retryLater(): void {
    if (this.stopped || !this.options.connection.connected) return;
    clearTimeout(this.timer);
    const min = this.options.minBackoffMs ?? 200;
    const max = this.options.maxBackoffMs ?? 10_000;
    const delay = Math.min(max, min * 2 ** this.attempt);
    this.attempt++;
    this.options.logger.warn('Consumer channel closed; resubscribing', {
      queue: this.options.queue,
      retry_in_ms: delay,
      attempt: this.attempt,
    });
    this.timer = setTimeout(() => {
      this.subscribe().catch(() => undefined);
    }, delay);
  }
}
