import type {ConfirmChannel, Message, Options} from 'amqplib';

/** The broker took the publish back: no queue was bound for its routing key. */
export class UnroutableError extends Error {
  override name = 'UnroutableError';
}

/** A publish waiting for its confirm, and the return that came for it. */
interface Waiting {
  exchange: string;
  routingKey: string;
  content: Buffer;
  returned?: Message;
}

/** Each channel's publishes waiting for their confirms, in publish order. */
const waitingOn = new WeakMap<ConfirmChannel, Set<Waiting>>();

/**
 * The channel's waiting publishes, with the one 'return' listener that
 * hands each return to its publish. A return names no publish: it goes to
 * the earliest waiting publish of the same exchange, routing key and bytes
 * that has none yet (the broker returns in publish order). Matching on the
 * route alone let a routed message take the return of another sent to the
 * same queue just before it was declared or after it was deleted. Every
 * channel publishConfirmed is given has this listener, so its owner needs
 * none of its own.
 */
function waitingPublishes(channel: ConfirmChannel): Set<Waiting> {
  const known = waitingOn.get(channel);
  if (known) return known;
  const publishes = new Set<Waiting>();
  channel.on('return', (message: Message) => {
    for (const publish of publishes) {
      if (
        !publish.returned &&
        publish.exchange === message.fields.exchange &&
        publish.routingKey === message.fields.routingKey &&
        publish.content.equals(message.content)
      ) {
        publish.returned = message;
        return;
      }
    }
  });
  waitingOn.set(channel, publishes);
  return publishes;
}

/**
 * Publishes one message and resolves only once the broker has confirmed it
 * and did not return it: with `mandatory`, a message no queue takes comes
 * back (basic.return) before its confirm, and counts as not published.
 * Other publishes may wait on the same channel at once (the webhook
 * consumer settles several deliveries together): each gets only its own
 * return.
 */
export function publishConfirmed(
  channel: ConfirmChannel,
  exchange: string,
  routingKey: string,
  content: Buffer,
  options: Options.Publish,
): Promise<void> {
  const waiting = waitingPublishes(channel);
  const publish: Waiting = {exchange, routingKey, content};
  waiting.add(publish);
  return new Promise((resolve, reject) => {
    const answered = (error: unknown) => {
      waiting.delete(publish);
      const {returned} = publish;
      if (error) reject(error);
      else if (returned) {
        reject(
          new UnroutableError(
            `no queue took the message for ${exchange}/${routingKey}: ${(returned.fields as {replyText?: string}).replyText}`,
          ),
        );
      } else resolve();
    };
    try {
      channel.publish(
        exchange,
        routingKey,
        content,
        {persistent: true, mandatory: true, ...options},
        answered,
      );
    } catch (error) {
      waiting.delete(publish);
      forgetConfirmCallback(channel, answered);
      throw error;
    }
  });
}

/**
 * amqplib 0.10 queues a publish's confirm callback before it encodes the
 * message: one that failed to encode (a routing key over 255 bytes, a
 * header of a type AMQP has not) left its callback queued with nothing
 * sent, and every later confirm on the channel went to the callback queued
 * before its own, the last one to none. Taken back when it is still the
 * last queued; left alone if amqplib's shape has changed.
 */
function forgetConfirmCallback(
  channel: ConfirmChannel,
  callback: (error: unknown) => void,
): void {
  const {unconfirmed} = channel as unknown as {unconfirmed?: unknown};
  if (Array.isArray(unconfirmed) && unconfirmed.at(-1) === callback) {
    unconfirmed.pop();
  }
}
