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

/** Every queue of the vhost: ready and unacknowledged messages, consumers. */
export async function queueDepths(vhost: string): Promise<QueueDepth[]> {
  const {stdout} = await run(
    'rabbitmqctl',
    [
      '-q',
      'list_queues',
      '-p',
      vhost,
      '--no-table-headers',
      'name',
      'messages_ready',
      'messages_unacknowledged',
      'consumers',
    ],
    {
      env: {
        ...process.env,
        PATH: `${process.env.PATH}:/usr/sbin:/usr/lib/rabbitmq/bin`,
      },
    },
  );
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
