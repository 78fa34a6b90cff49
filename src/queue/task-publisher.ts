import type {ConfirmChannel, Options} from 'amqplib';
import {EventEmitter, once} from 'node:events';
import type {Logger} from '../logging/logger';
import type {Metrics} from '../metrics/metrics';
import {currentRequestId} from '../logging/request-context';
import type {AmqpConnection} from './amqp-connection';
import {encodeTaskMessage, TaskMessage} from './task-message';
import {TASK_QUEUE} from './topology';
import {RETRY_COUNT_HEADER} from '../consumer/retry-count';
import {RESENT_HEADER} from '../consumer/resent-count';
import {closeQuietly} from './close-quietly';

/**
 * Resolves when the channel's write buffer drained or the channel closed,
 * and leaves no listener behind: a producer waits here many times per tick,
 * and each forgotten `once` listener would stay on the channel for good.
 */
export async function drainedOrClosed(channel: EventEmitter): Promise<void> {
  const done = new AbortController();
  const wait = (event: string) =>
    once(channel, event, {signal: done.signal}).then(
      () => undefined,
      () => undefined,
    );
  try {
    await Promise.race([wait('drain'), wait('close')]);
  } finally {
    done.abort();
  }
}

/** The request that caused a task (run now, re-drive), on its message. */
export const REQUEST_ID_MESSAGE_HEADER = 'x-request-id';

/** Execution id → when the broker's confirm for its message arrived. */
export type Confirmations = Map<number, Date>;

export interface OutgoingTask {
  executionId: number;
  executionKey: string;
  message: TaskMessage;
  /** A copy sent again by the lost-run sweep: the retry it was lost at, and its copy number. */
  resend?: {retryCount: number; resent: number};
}

/**
 * The headers a task message is published with. A resent copy carries its
 * retry count and copy number, and a deduplication key of its own: the
 * broker's deduplication (where the plugin runs) must not drop it as a
 * repeat of the copy it replaces.
 */
function taskHeaders(
  task: OutgoingTask,
  publishedAt: number,
  requestId: string | undefined,
): Record<string, unknown> {
  const dedupKey = `${task.message.scheduler_id}:${task.executionKey}`;
  return {
    'x-execution-id': task.executionId,
    'x-execution-key': task.executionKey,
    'x-deduplication-header': task.resend
      ? `${dedupKey}:resent-${task.resend.resent}`
      : dedupKey,
    // Epoch ms: the consumer's queue-wait metric starts here.
    'x-published-at': publishedAt,
    ...(requestId === undefined
      ? {}
      : {[REQUEST_ID_MESSAGE_HEADER]: requestId}),
    ...(task.resend
      ? {
          [RETRY_COUNT_HEADER]: task.resend.retryCount,
          [RESENT_HEADER]: task.resend.resent,
        }
      : {}),
  };
}

/**
 * The properties a task message is published with: persistent, mandatory
 * (a message no queue takes comes back), JSON, the run's id as message id
 * and the task headers. Exported for the publish-shape benchmark.
 */
export function taskPublishOptions(
  task: OutgoingTask,
  publishedAt: number,
  requestId: string | undefined,
): Options.Publish & {messageId: string} {
  return {
    persistent: true,
    mandatory: true,
    contentType: 'application/json',
    messageId: `${task.executionId}`,
    headers: taskHeaders(task, publishedAt, requestId),
  };
}

/** How many confirm channels a publisher spreads a batch over, at most. */
export const MAX_PUBLISH_CHANNELS = 16;

/** How long a batch waits for the broker's answers by default. */
export const DEFAULT_CONFIRM_TIMEOUT_MS = 60_000;

export interface TaskPublisherOptions {
  /**
   * Confirm channels a batch is spread over (1 to MAX_PUBLISH_CHANNELS):
   * the broker works each channel's messages and confirms in a process of
   * its own, so a minute's thousands of runs are confirmed sooner over
   * several. A batch smaller than two messages per channel uses fewer.
   */
  channels?: number;
  /**
   * How long a batch waits for the broker's answers: a broker stuck in
   * flow control (seen when the task queue was deleted during a batch)
   * never answers, and the tick or request waiting would hang for good.
   * What is unanswered then counts as not published (the sweeper sends it
   * again) and the batch's channels are closed.
   */
  confirmTimeoutMs?: number;
}

/** How many runs of at least two a batch of `length` is cut into, at most `parts`. */
function partsFor(length: number, parts: number): number {
  return Math.max(1, Math.min(parts, Math.floor(length / 2)));
}

/**
 * `tasks` cut into at most `parts` runs of consecutive tasks whose sizes
 * differ by at most one, each of at least two tasks (a batch of one or two
 * is one run).
 */
export function splitIntoParts<T>(tasks: T[], parts: number): T[][] {
  const count = partsFor(tasks.length, parts);
  const base = Math.floor(tasks.length / count);
  const longer = tasks.length % count;
  const cut: T[][] = [];
  let from = 0;
  for (let i = 0; i < count; i++) {
    const size = base + (i < longer ? 1 : 0);
    cut.push(tasks.slice(from, from + size));
    from += size;
  }
  return cut;
}

/** A channel slot a batch asked for, and the channel it is opening. */
interface OpeningSlot {
  slot: number;
  opening: Promise<ConfirmChannel>;
}

/** A slot whose channel opened. */
interface OpenSlot extends OpeningSlot {
  channel: ConfirmChannel;
}

/** One batch's answers; `open` turns false at its deadline. */
interface BatchAnswers {
  confirmed: Confirmations;
  returned: number;
  open: boolean;
}

/**
 * Publishes task messages so that none is lost silently: persistent, on
 * confirm channels, `mandatory` (a message no queue takes comes back and
 * counts as not published), waiting for `drain` when a channel's buffer is
 * full. Only what the broker confirmed is reported as published.
 */
export class TaskPublisher {
  private readonly channels: (Promise<ConfirmChannel> | undefined)[];
  private readonly returned = new Set<string>();
  private readonly confirmTimeoutMs: number;

  constructor(
    private readonly connection: AmqpConnection,
    private readonly logger: Logger,
    /** Counts publishes by broker answer (the producer's metrics). */
    private readonly metrics?: Metrics,
    options: TaskPublisherOptions = {},
  ) {
    const channels = options.channels ?? 1;
    if (
      !Number.isInteger(channels) ||
      channels < 1 ||
      channels > MAX_PUBLISH_CHANNELS
    ) {
      throw new RangeError(
        `publish channels must be an integer from 1 to ${MAX_PUBLISH_CHANNELS}, not ${channels}`,
      );
    }
    this.confirmTimeoutMs =
      options.confirmTimeoutMs ?? DEFAULT_CONFIRM_TIMEOUT_MS;
    if (!(this.confirmTimeoutMs > 0)) {
      throw new RangeError(
        `the confirm timeout must be a positive number of ms, not ${this.confirmTimeoutMs}`,
      );
    }
    this.channels = new Array(channels).fill(undefined);
    connection.on('disconnected', () => this.forgetChannels());
  }

  /**
   * Publishes all; resolves with the runs the broker confirmed, and when,
   * within `confirmTimeoutMs` whatever the broker does (opening the
   * channels included: a connection stuck in flow control answers nothing).
   */
  async publish(tasks: OutgoingTask[]): Promise<Confirmations> {
    const batch: BatchAnswers = {confirmed: new Map(), returned: 0, open: true};
    if (tasks.length === 0) return batch.confirmed;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'timed out'>(resolve => {
      timer = setTimeout(() => resolve('timed out'), this.confirmTimeoutMs);
    });
    try {
      const slots = Array.from(
        {length: partsFor(tasks.length, this.channels.length)},
        (_, slot) => ({slot, opening: this.openChannel(slot)}),
      );
      const channels = await Promise.race([this.opened(slots), deadline]);
      if (channels === 'timed out') {
        this.giveUp(slots, tasks.length, batch, 'opening channels');
        return this.reported(batch, tasks.length);
      }
      if (channels.length === 0) {
        this.metrics?.count('publishes', {result: 'failed'}, tasks.length);
        return batch.confirmed;
      }
      const parts = splitIntoParts(tasks, channels.length);
      const publishedAt = Date.now();
      // A run now or re-drive: its task's log lines name the request.
      const requestId = currentRequestId();
      const answered = Promise.all(
        parts.map((part, i) =>
          this.publishOn(
            channels[i].channel,
            part,
            {publishedAt, requestId},
            batch,
          ),
        ),
      );
      if ((await Promise.race([answered, deadline])) === 'timed out') {
        this.giveUp(channels, tasks.length, batch, 'waiting for confirms');
      }
      return this.reported(batch, tasks.length);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Counts and logs the batch's outcome; what the broker confirmed. */
  private reported(batch: BatchAnswers, tasks: number): Confirmations {
    // Late answers no longer count: the caller is told now.
    batch.open = false;
    const {confirmed, returned} = batch;
    const failed = tasks - confirmed.size;
    this.metrics?.count('publishes', {result: 'confirmed'}, confirmed.size);
    this.metrics?.count('publishes', {result: 'returned'}, returned);
    this.metrics?.count('publishes', {result: 'failed'}, failed - returned);
    if (failed > 0) {
      this.logger.warn('Some publishes were not confirmed', {
        confirmed: confirmed.size,
        not_confirmed: failed,
      });
    }
    return confirmed;
  }

  async close(): Promise<void> {
    const channels = [...this.channels];
    this.forgetChannels();
    await Promise.all(
      channels.map(async channel => {
        const opened = await channel?.catch(() => undefined);
        if (opened) await closeQuietly(opened);
      }),
    );
  }

  /**
   * The slots' channels that opened, in slot order, leaving out those that
   * did not (a broker's channel limit, say): a batch goes out on fewer
   * rather than not at all. None open: logged, and the batch is skipped.
   */
  private async opened(slots: OpeningSlot[]): Promise<OpenSlot[]> {
    const settled = await Promise.allSettled(slots.map(s => s.opening));
    const opened = settled.flatMap((result, i) =>
      result.status === 'fulfilled'
        ? [{...slots[i], channel: result.value}]
        : [],
    );
    const refused = settled.find(
      (result): result is PromiseRejectedResult => result.status === 'rejected',
    );
    if (refused === undefined) return opened;
    const error = (refused.reason as Error)?.message ?? String(refused.reason);
    const wanted = slots.length;
    if (opened.length === 0) {
      this.logger.warn('Publish skipped: no channel could be opened', {
        wanted,
        error,
      });
    } else {
      this.logger.warn('Publishing on fewer channels than configured', {
        wanted,
        opened: opened.length,
        error,
      });
    }
    return opened;
  }

  /**
   * The batch's deadline passed: its unanswered messages count as not
   * published, and its channels are let go and closed (once open), so the
   * next batch opens new ones. A slot another batch has since filled is
   * left alone.
   */
  private giveUp(
    slots: OpeningSlot[],
    tasks: number,
    batch: BatchAnswers,
    stage: string,
  ): void {
    const blocked = this.connection.blocked;
    this.logger.error('Publish confirms timed out', {
      timeout_ms: this.confirmTimeoutMs,
      stage,
      tasks,
      confirmed: batch.confirmed.size,
      unanswered: tasks - batch.confirmed.size - batch.returned,
      ...(blocked === undefined ? {} : {broker_blocked: blocked}),
    });
    for (const {slot, opening} of slots) {
      if (this.channels[slot] === opening) this.channels[slot] = undefined;
      opening.then(closeQuietly).catch(() => undefined);
    }
    // A connection that left a batch unanswered this long has stopped
    // answering (seen: stuck in flow control after the task queue was
    // deleted mid-batch); a fresh one is served at once. Not while the
    // broker says it blocks publishing (a memory or disk alarm): a fresh
    // connection would be blocked alike, and each one dropped would stay
    // on the broker, unread, until the alarm clears.
    if (blocked === undefined) {
      this.connection.drop('publish confirms timed out');
    }
  }

  /**
   * Publishes `tasks` in order on one channel; resolves once each has its
   * answer. Confirms and returns go into `batch` while it is open.
   */
  private async publishOn(
    channel: ConfirmChannel,
    tasks: OutgoingTask[],
    stamp: {publishedAt: number; requestId: string | undefined},
    batch: BatchAnswers,
  ): Promise<void> {
    const confirmations: Promise<void>[] = [];
    for (const [index, task] of tasks.entries()) {
      // The batch ended at its deadline and was reported: nothing more goes.
      if (!batch.open) break;
      const options = taskPublishOptions(
        task,
        stamp.publishedAt,
        stamp.requestId,
      );
      const {messageId} = options;
      let answered!: () => void;
      const answer = new Promise<void>(resolve => (answered = resolve));
      let accepted: boolean;
      try {
        accepted = channel.publish(
          '',
          TASK_QUEUE,
          encodeTaskMessage(task.message),
          options,
          error => {
            // Returned, then acked: no queue took it. An error is a nack, or
            // the channel closed first: failed. Either way its mark goes.
            const wasReturned = this.returned.delete(messageId);
            if (batch.open && !error) {
              if (wasReturned) batch.returned++;
              else batch.confirmed.set(task.executionId, new Date());
            }
            answered();
          },
        );
      } catch (error) {
        if (!batch.open) break;
        // The channel closed under this batch (the broker ended it, or the
        // connection dropped while we waited for drain): the rest of this
        // part is not published, and what was confirmed before still is.
        this.logger.warn('Publish channel failed during a batch', {
          not_sent: tasks.length - index,
          error: (error as Error).message,
        });
        break;
      }
      confirmations.push(answer);
      // Backpressure: the socket buffer is full, wait before writing more.
      if (!accepted) await drainedOrClosed(channel);
    }
    await Promise.all(confirmations);
  }

  /** The next batch opens its channels afresh. */
  private forgetChannels(): void {
    for (const slot of this.channels.keys()) this.channels[slot] = undefined;
  }

  private openChannel(slot: number): Promise<ConfirmChannel> {
    const open = this.channels[slot];
    if (open) return open;
    const opening = this.connection.createConfirmChannel().then(channel => {
      channel.on('return', message => {
        this.returned.add(String(message.properties.messageId));
        this.logger.error('Task message returned: no queue took it', {
          execution_key: message.properties.headers?.['x-execution-key'],
        });
      });
      channel.on('error', error =>
        this.logger.warn('Publish channel error', {error: error.message}),
      );
      channel.on('close', () => {
        if (this.channels[slot] === opening) this.channels[slot] = undefined;
      });
      return channel;
    });
    opening.catch(() => {
      if (this.channels[slot] === opening) this.channels[slot] = undefined;
    });
    this.channels[slot] = opening;
    return opening;
  }
}
