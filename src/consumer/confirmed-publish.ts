import type {ConfirmChannel, Message, Options} from 'amqplib';

/** The broker took the publish back: no queue was bound for its routing key. */
export class UnroutableError extends Error {
  override name = 'UnroutableError';
}

/**
 * Publishes one message and resolves only once the broker has confirmed it
 * and did not return it: with `mandatory`, a message no queue takes comes
 * back (basic.return) before its confirm, and counts as not published.
 * Other publishes may wait on the same channel at once (the webhook
 * consumer settles several deliveries together), so a return counts only
 * for the exchange and routing key it names: on the default and direct
 * exchanges this service uses, those alone decide whether a queue takes a
 * message, so a return for them is this message's, or one of a message
 * routed no better.
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
      if (
        message.fields.exchange === exchange &&
        message.fields.routingKey === routingKey
      ) {
        returned = message;
      }
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
