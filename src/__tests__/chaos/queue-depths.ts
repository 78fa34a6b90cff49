import {execFile} from 'node:child_process';
import {promisify} from 'node:util';

const run = promisify(execFile);

export interface QueueDepth {
  queue: string;
  ready: number;
  unacknowledged: number;
  /** Subscriptions on the queue. */
  consumers: number;
}

/** Runs `rabbitmqctl` with the given arguments; resolves with its stdout. */
export type RabbitCtl = (args: string[]) => Promise<string>;

/** The machine's broker, through the system's rabbitmqctl. */
const systemCtl: RabbitCtl = async args =>
  (
    await run('rabbitmqctl', args, {
      env: {
        ...process.env,
        PATH: `${process.env.PATH}:/usr/sbin:/usr/lib/rabbitmq/bin`,
      },
    })
  ).stdout;

/** Every queue of the vhost: ready and unacknowledged messages, consumers. */
export async function queueDepths(
  vhost: string,
  ctl: RabbitCtl = systemCtl,
): Promise<QueueDepth[]> {
  const stdout = await ctl([
    '-q',
    'list_queues',
    '-p',
    vhost,
    '--no-table-headers',
    'name',
    'messages_ready',
    'messages_unacknowledged',
    'consumers',
  ]);
  return stdout
    .split('\n')
    .map(line => line.trim().split(/\s+/))
    .filter(parts => parts.length === 4)
    .map(([queue, ready, unacknowledged, consumers]) => ({
      queue,
      ready: Number(ready),
      unacknowledged: Number(unacknowledged),
      consumers: Number(consumers),
    }));
}
