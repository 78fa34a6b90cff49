import {execFile} from 'node:child_process';
import {promisify} from 'node:util';

const run = promisify(execFile);

export interface QueueDepth {
  queue: string;
  ready: number;
  unacknowledged: number;
}

/** Every queue of the vhost with ready and unacknowledged message counts. */
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
    .filter(parts => parts.length === 3)
    .map(([queue, ready, unacknowledged]) => ({
      queue,
      ready: Number(ready),
      unacknowledged: Number(unacknowledged),
    }));
}
