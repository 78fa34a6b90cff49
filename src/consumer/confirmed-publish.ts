import type {ConfirmChannel, Options} from 'amqplib';

/** Publishes one message and resolves only once the broker has confirmed it. */
export function publishConfirmed(
  channel: ConfirmChannel,
  exchange: string,
  routingKey: string,
  content: Buffer,
  options: Options.Publish,
): Promise<void> {
  return new Promise((resolve, reject) => {
    channel.publish(
      exchange,
      routingKey,
      content,
      {persistent: true, mandatory: true, ...options},
      error => (error ? reject(error) : resolve()),
    );
  });
}
