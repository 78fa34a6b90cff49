import type {Channel, ConfirmChannel} from 'amqplib';
import {publishConfirmed} from '../consumer/confirmed-publish';
import type {Logger} from '../logging/logger';
import {assertTopology, QueueSpec, Topology} from './topology';
import {closeQuietly} from './close-quietly';

/** Where a queue's messages wait while the queue is declared again. */
export const holdingQueueOf = (queue: string) => `${queue}.migrating`;

export interface QueueMigrationResult {
  queue: string;
  /** migrated: redeclared with its messages; current: already as declared. */
  state: 'migrated' | 'current';
  moved: number;
}

export interface MigrationBroker {
  createChannel(): Promise<Channel>;
  createConfirmChannel(): Promise<ConfirmChannel>;
}

/** Runs `work` on a channel of its own: a 404/406 closes only that channel. */
async function probe<T>(
  broker: MigrationBroker,
  work: (channel: Channel) => Promise<T>,
): Promise<T | undefined> {
  const channel = await broker.createChannel();
  channel.on('error', () => undefined);
  try {
    const result = await work(channel);
    await closeQuietly(channel);
    return result;
  } catch (error) {
    const code = (error as {code?: number}).code;
    if (code === 404 || code === 406) return undefined;
    throw error;
  }
}

/**
 * Moves every message of `from` to `to`: each is published (persistent,
 * properties and headers kept) and confirmed by the broker before the
 * original is acked, so a crash can leave a message in both queues (the run
 * ledger makes that one run) but never in neither.
 */
async function moveMessages(
  channel: ConfirmChannel,
  from: string,
  to: string,
): Promise<number> {
  let moved = 0;
  for (;;) {
    const message = await channel.get(from, {noAck: false});
    if (message === false) return moved;
    await publishConfirmed(channel, '', to, message.content, {
      ...message.properties,
      persistent: true,
    });
    channel.ack(message);
    moved++;
  }
}

/**
 * Deletes a queue this run emptied. Quorum queues refuse the if-empty flag,
 * so emptiness is checked first (nothing else publishes while the
 * installation is stopped).
 */
async function deleteIfEmpty(channel: Channel, queue: string): Promise<void> {
  const {messageCount} = await channel.checkQueue(queue);
  if (messageCount > 0) {
    throw new Error(
      `queue ${queue} still holds ${messageCount} messages: is a process still publishing?`,
    );
  }
  await channel.deleteQueue(queue);
}

/**
 * Brings one queue to its declared type and arguments. RabbitMQ cannot
 * change a queue's type, so a queue declared otherwise (a classic queue of
 * an earlier version) is emptied into a holding quorum queue, deleted,
 * declared anew, and refilled. Safe to run again: an interrupted run left
 * its messages in the holding queue, and they are moved back.
 */
export async function migrateQueue(
  broker: MigrationBroker,
  spec: QueueSpec,
  logger: Logger,
): Promise<QueueMigrationResult> {
  const holding = holdingQueueOf(spec.name);
  const channel = await broker.createConfirmChannel();
  channel.on('error', () => undefined);
  try {
    const current = await probe(broker, c =>
      c.assertQueue(spec.name, spec.options),
    );
    let moved = 0;
    if (!current) {
      const old = await channel.checkQueue(spec.name);
      if (old.consumerCount > 0) {
        throw new Error(
          `queue ${spec.name} has ${old.consumerCount} consumers: stop every producer, consumer and API process first`,
        );
      }
      await channel.assertQueue(holding, {
        durable: true,
        arguments: {'x-queue-type': 'quorum'},
      });
      moved = await moveMessages(channel, spec.name, holding);
      await deleteIfEmpty(channel, spec.name);
      await channel.assertQueue(spec.name, spec.options);
      logger.info('Queue declared anew', {queue: spec.name, held: moved});
    }
    const held = await probe(broker, c => c.checkQueue(holding));
    if (held) {
      // A fresh channel: RabbitMQ 3.10 keeps per-channel state of the old
      // queue's type, and a publish to the redeclared queue on the channel
      // that used the old one ends the connection (541 INTERNAL_ERROR).
      const refill = await broker.createConfirmChannel();
      refill.on('error', () => undefined);
      try {
        moved = await moveMessages(refill, holding, spec.name);
        await deleteIfEmpty(refill, holding);
      } finally {
        await closeQuietly(refill);
      }
    }
    return {
      queue: spec.name,
      state: current && !held ? 'current' : 'migrated',
      moved,
    };
  } finally {
    await closeQuietly(channel);
  }
}

/** Every queue of the topology, then the bindings that deleting a queue removed. */
export async function migrateQueues(
  broker: MigrationBroker,
  topology: Topology,
  logger: Logger,
): Promise<QueueMigrationResult[]> {
  // The exchange first: a redeclared queue dead-letters into it.
  await assertTopology(() => broker.createChannel(), {
    ...topology,
    queues: [],
    bindings: [],
  });
  const results: QueueMigrationResult[] = [];
  for (const spec of topology.queues) {
    results.push(
      await migrateQueue(broker, {...spec, keepExisting: false}, logger),
    );
  }
  await assertTopology(() => broker.createChannel(), topology);
  return results;
}
