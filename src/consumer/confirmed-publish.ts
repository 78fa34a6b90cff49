import type {ConfirmChannel, Message, Options} from 'amqplib';

/** The broker took the publish back: no queue was bound for its routing key. */
export class UnroutableError extends Error {
  override name = 'UnroutableError';
}

/**
 * Publishes one message and resolves only once the broker has confirmed it
 * and did not return it: with `mandatory`, a message no queue takes comes
 * back (basic.return) before its confirm, and counts as not published. The
 * caller publishes one message at a time on the channel, so a return seen
 * while this publish waits is this message's.
 */
export function publishConfirmed(
  channel: ConfirmChannel,
  exchange: string,
  routingKey: string,
  content: Buffer,
  options: Options.Publish,
): Promise<void> {
  return new Promise((resolve, reject) => {
    let returned: Message | undefined;
    const onReturn = (message: Message) => {
      returned = message;
    };
    channel.on('return', onReturn);
    channel.publish(
      exchange,
      routingKey,
      content,
      {persistent: true, mandatory: true, ...options},
      error => {
        channel.off('return', onReturn);
        if (error) reject(error);
        else if (returned) {
          reject(
            new UnroutableError(
              `no queue took the message for ${exchange}/${routingKey}: ${(returned.fields as {replyText?: string}).replyText}`,
            ),
          );
        } else resolve();
      },
    );
  });
}
