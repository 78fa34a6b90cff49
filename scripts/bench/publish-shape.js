'use strict';
// What the task message's shape costs the publish, apart from the rest of
// the pipeline: N persistent, mandatory messages over K confirm channels
// into the empty task queue of the benchmark's own vhost, three kinds
// alternated round by round (the first round dropped):
//   service       the producer's TaskPublisher.publish;
//   floor         bench:pipeline's floor loop, one header;
//   floor-shaped  the same loop with the service's properties and headers.
// Reports the median wall time to the last confirm and the process's CPU.
// Usage: node scripts/bench/publish-shape.js [--messages 10000]
//          [--channels 4] [--rounds 13]
const amqp = require('amqplib');
const {createBenchEnvironment} = require('./bench-environment');
const {publishPart} = require('./pipeline/floor-run');
const {AmqpConnection} = require('../../dist/queue/amqp-connection');
const {
  splitIntoParts,
  TaskPublisher,
  taskPublishOptions,
} = require('../../dist/queue/task-publisher');
const {
  assertTopology,
  brokerTopology,
  retrySettings,
  TASK_QUEUE,
} = require('../../dist/queue/topology');
const {
  amqpSocketOf,
  coalesceTurnWrites,
} = require('../../dist/queue/turn-writes');

const KINDS = ['service', 'floor', 'floor-shaped'];

function option(name, fallback) {
  const at = process.argv.indexOf(`--${name}`);
  if (at === -1) return fallback;
  const value = Number(process.argv[at + 1]);
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new Error(`--${name} takes a positive integer`);
  }
  return value;
}

/** The runs a minute would send: reminder 1 for schedulers 1..n. */
function outgoingTasks(n) {
  return Array.from({length: n}, (_, i) => ({
    executionId: i + 1,
    executionKey: '2026-12-02T16:00',
    message: {
      type: 'reminder',
      id: 1,
      scheduler_id: i + 1,
      params_scheduler: '{}',
    },
  }));
}

/** The floor's loop over `channels`, with the options `optionsFor` gives. */
async function floorPublish(channels, tasks, optionsFor) {
  const rows = tasks.map(t => ({
    id: t.executionId,
    scheduler_id: t.message.scheduler_id,
  }));
  const confirmedAt = new Array(rows.length);
  const parts = splitIntoParts(
    rows.map((_, i) => i),
    channels.length,
  );
  await Promise.all(
    parts.map((indices, k) =>
      publishPart(channels[k], rows, indices, confirmedAt, optionsFor),
    ),
  );
}

const median = values => [...values].sort((a, b) => a - b)[values.length >> 1];

async function main() {
  const messages = option('messages', 10_000);
  const channelCount = option('channels', 4);
  const rounds = option('rounds', 13);
  const env = await createBenchEnvironment();
  const connection = new AmqpConnection(env.amqpUrl, env.logger, {
    onConnect: c =>
      assertTopology(
        () => c.createChannel(),
        brokerTopology(retrySettings(env.config)),
      ),
  });
  let raw;
  try {
    await connection.start();
    const publisher = new TaskPublisher(connection, env.logger, undefined, {
      channels: channelCount,
    });
    raw = await amqp.connect(env.amqpUrl, {noDelay: true});
    coalesceTurnWrites(amqpSocketOf(raw));
    const channels = [];
    for (let i = 0; i < channelCount; i++) {
      channels.push(await raw.createConfirmChannel());
    }
    const admin = await raw.createChannel();
    const tasks = outgoingTasks(messages);
    const byId = new Map(tasks.map(t => [t.executionId, t]));
    const publishedAt = Date.now();
    const run = {
      service: async () => {
        const confirmed = await publisher.publish(tasks);
        if (confirmed.size !== messages) {
          throw new Error(`${confirmed.size} of ${messages} confirmed`);
        }
      },
      floor: () => floorPublish(channels, tasks),
      'floor-shaped': () =>
        floorPublish(channels, tasks, id =>
          taskPublishOptions(byId.get(id), publishedAt, undefined),
        ),
    };
    const results = Object.fromEntries(KINDS.map(k => [k, []]));
    for (let round = 0; round < rounds; round++) {
      // Each kind goes first, second and third in turn.
      const order = KINDS.map((_, i) => KINDS[(i + round) % KINDS.length]);
      for (const kind of order) {
        await admin.purgeQueue(TASK_QUEUE);
        const cpu = process.cpuUsage();
        const start = performance.now();
        await run[kind]();
        const wallMs = performance.now() - start;
        const {user, system} = process.cpuUsage(cpu);
        if (round > 0)
          results[kind].push({wallMs, cpuMs: (user + system) / 1000});
      }
    }
    const report = Object.fromEntries(
      KINDS.map(kind => [
        kind,
        {
          wall_ms_median: Math.round(median(results[kind].map(r => r.wallMs))),
          cpu_ms_median: Math.round(median(results[kind].map(r => r.cpuMs))),
          wall_ms: results[kind].map(r => Math.round(r.wallMs)),
        },
      ]),
    );
    process.stdout.write(
      `${JSON.stringify(
        {
          benchmark: 'publish-shape',
          messages,
          channels: channelCount,
          measured_rounds: rounds - 1,
          results: report,
        },
        null,
        2,
      )}\n`,
    );
    await publisher.close();
  } finally {
    await raw?.close().catch(() => undefined);
    await connection.stop();
    await env.remove();
  }
}

main().catch(error => {
  process.stderr.write(`bench:publish-shape failed: ${error.stack}\n`);
  process.exit(1);
});
