import type {Channel, ConsumeMessage} from 'amqplib';

/**
 * One delivery, settled at most once: a second ack or nack of the same tag
 * makes RabbitMQ close the channel (406 unknown delivery tag), which would
 * take the consumer's subscription with it.
 */
export class Delivery {
  private settledAs?: 'ack' | 'nack';

  constructor(
    readonly channel: Channel,
    readonly message: ConsumeMessage,
  ) {}

  get settled(): boolean {
    return this.settledAs !== undefined;
  }

  /** False when already settled or the channel is gone (the broker redelivers). */
  ack(): boolean {
    return this.settle('ack', () => this.channel.ack(this.message));
  }

  nack(requeue: boolean): boolean {
    return this.settle('nack', () =>
      this.channel.nack(this.message, false, requeue),
    );
  }

  private settle(as: 'ack' | 'nack', action: () => void): boolean {
    if (this.settledAs) return false;
    this.settledAs = as;
    try {
      action();
      return true;
    } catch {
      // Channel closed: the broker redelivers unacked messages itself.
      return false;
    }
  }
}
