'use strict';
// The floor: what PostgreSQL and RabbitMQ cost with no application around
// them. Just after the boundary (as the producer's ticker) one INSERT claims
// every due run, each is published on a confirm channel (persistent,
// mandatory; --floor-publish-channels K cuts the runs into K parts, each on
// a channel of its own, as the producer's AMQP_PUBLISH_CHANNELS does), one
// UPDATE records every confirm's time as `published_at`;
// C bare consumer processes, each with the service workers' channel count
// (prefetch 1), only ack: they drain the queue as fast as the service's
// consumers could, so the broker works as hard during the publish.
const os = require('node:os');
const path = require('node:path');
const {spawn} = require('node:child_process');
const amqp = require('amqplib');
const {Client} = require('pg');
const {createBenchEnvironment} = require('../bench-environment');
const {
  cpuSeconds,
  cpuSince,
  machineCpu,
  stopAll,
} = require('../service-processes');
const {
  assertTopology,
  brokerTopology,
  retrySettings,
  TASK_QUEUE,
} = require('../../../dist/queue/topology');
const {executionKey} = require('../../../dist/scheduling/execution-key');
const {splitIntoParts} = require('../../../dist/queue/task-publisher');
const {
  setEveryThreadPriority,
} = require('../../../dist/process/process-priority');
const {
  amqpSocketOf,
  coalesceTurnWrites,
} = require('../../../dist/queue/turn-writes');
const {
  ledgerReport,
  minutesFrom,
  nextBoundary,
  seedReminderSchedulers,
  seconds,
  sleep,
  waitFor,
  waitForWarmMinute,
} = require('./common');

// The floor starts when the producer's ticker would.
const {AFTER_BOUNDARY_MS} = require('../../../dist/producer/minute-ticker');

/** The floor's message options: persistent, mandatory, the run's id as its one header. */
const floorOptions = id => ({
  persistent: true,
  mandatory: true,
  headers: {'x-execution-id': id},
});

/**
 * Publishes the rows at `indices` on one confirm channel with the options
 * `optionsFor(id)` gives (the floor's by default); confirm times into
 * `confirmedAt`.
 */
async function publishPart(
  channel,
  rows,
  indices,
  confirmedAt,
  optionsFor = floorOptions,
) {
  const confirms = [];
  for (const i of indices) {
    const {id, scheduler_id: schedulerId} = rows[i];
    const body = Buffer.from(
      JSON.stringify({
        type: 'reminder',
        id: 1,
        scheduler_id: schedulerId,
        params_scheduler: '{}',
      }),
    );
    let accepted = true;
    confirms.push(
      new Promise((resolve, reject) => {
        accepted = channel.publish(
          '',
          TASK_QUEUE,
          body,
          optionsFor(Number(id)),
          error => {
            if (error) reject(error);
            confirmedAt[i] = new Date();
            resolve();
          },
        );
      }),
    );
    if (!accepted) await new Promise(resolve => channel.once('drain', resolve));
  }
  await Promise.all(confirms);
}

/** Claims the slot's runs, publishes them cut into one part per channel. */
async function claimAndPublish(db, channels, slot) {
  const {rows} = await db.query(
    `INSERT INTO scheduler_execution
       (scheduler_id, execution_key, slot, executed_at, container_id, status)
     SELECT id, $1, $2, clock_timestamp(), 'floor', 'claimed'
       FROM scheduler WHERE status
     ON CONFLICT (scheduler_id, execution_key) DO NOTHING
     RETURNING id, scheduler_id`,
    [executionKey(slot), slot],
  );
  const confirmedAt = new Array(rows.length);
  // Cut as the producer cuts a batch over its channels.
  const parts = splitIntoParts(
    rows.map((_, i) => i),
    channels.length,
  );
  await Promise.all(
    parts.map((indices, k) =>
      publishPart(channels[k], rows, indices, confirmedAt),
    ),
  );
  await db.query(
    `UPDATE scheduler_execution e
        SET published_at = c.at, status = 'published'
       FROM unnest($1::bigint[], $2::timestamptz[]) AS c(id, at)
      WHERE e.id = c.id`,
    [rows.map(r => r.id), confirmedAt],
  );
}

/**
 * Starts `opts.consumers` floor consumer processes of `opts.channels`
 * channels each; each entry's `ready` and `progress` follow its output.
 */
function startFloorConsumers(amqpUrl, opts) {
  return Array.from({length: opts.consumers}, () => {
    const child = spawn(
      process.execPath,
      [
        path.join(__dirname, 'floor-consumer.js'),
        amqpUrl,
        String(opts.channels),
      ],
      {stdio: ['ignore', 'pipe', 'inherit']},
    );
    const consumer = {child, ready: false, progress: {received: 0}};
    let pending = '';
    child.stdout.on('data', chunk => {
      const lines = (pending + chunk.toString()).split('\n');
      pending = lines.pop();
      for (const line of lines) {
        if (line === 'ready') consumer.ready = true;
        else if (line) consumer.progress = JSON.parse(line);
      }
    });
    return consumer;
  });
}

/** The consumers' deliveries together: how many, the first and the last. */
function deliveries(consumers) {
  const seen = consumers.map(c => c.progress).filter(p => p.received > 0);
  return {
    received: seen.reduce((sum, p) => sum + p.received, 0),
    first: Math.min(...seen.map(p => p.first)),
    last: Math.max(...seen.map(p => p.last)),
  };
}

/**
 * Runs `work` with every thread of this process at `nice`, as the
 * producer runs with PROCESS_NICE (undefined: as it is). Only around the
 * claim and publish: the floor's consumers, started from this process,
 * must not inherit it, as the service's workers do not. Going back is
 * best effort: unprivileged, a return from a positive value is a raise
 * the system refuses, and nothing timed runs in this process after it.
 */
async function atPriority(nice, work) {
  if (nice === undefined) return work();
  const before = os.getPriority();
  setEveryThreadPriority(nice);
  try {
    return await work();
  } finally {
    try {
      setEveryThreadPriority(before);
    } catch {
      // Stays at `nice`; see above.
    }
  }
}

/** opts: schedulers, consumers, channels, timeoutS, warmMinutes, producerNice. */
async function runFloor(opts) {
  const env = await createBenchEnvironment();
  const db = new Client({connectionString: env.databaseUrl});
  await db.connect();
  const connection = await amqp.connect(env.amqpUrl, {noDelay: true});
  // As the service's connections: a turn's frames leave in one write.
  coalesceTurnWrites(amqpSocketOf(connection));
  const children = [];
  try {
    await seedReminderSchedulers(db, opts.schedulers);
    await assertTopology(
      () => connection.createChannel(),
      brokerTopology(retrySettings(env.config)),
    );
    const channels = await Promise.all(
      Array.from({length: opts.floorPublishChannels}, () =>
        connection.createConfirmChannel(),
      ),
    );
    const consumers = startFloorConsumers(env.amqpUrl, opts);
    children.push(...consumers.map(c => c.child));
    if (!(await waitFor(() => consumers.every(c => c.ready), 30_000, 50))) {
      throw new Error('the floor consumers did not start');
    }
    const slots = minutesFrom(nextBoundary(2000), opts.warmMinutes + 1);
    const slot = slots[slots.length - 1];
    // The warm-up minutes: claimed, published and received as the measured one.
    for (const [i, warm] of slots.slice(0, -1).entries()) {
      await sleep(warm.getTime() + AFTER_BOUNDARY_MS - Date.now());
      await atPriority(opts.producerNice, () =>
        claimAndPublish(db, channels, warm),
      );
      const all = (i + 1) * opts.schedulers;
      await waitForWarmMinute(
        () => deliveries(consumers).received >= all,
        warm,
      );
    }
    await sleep(slot.getTime() - Date.now() - 50);
    const cpuBefore = [
      process.cpuUsage(),
      consumers.map(c => cpuSeconds(c.child.pid)),
    ];
    const machineBefore = machineCpu();
    await sleep(slot.getTime() + AFTER_BOUNDARY_MS - Date.now());
    await atPriority(opts.producerNice, () =>
      claimAndPublish(db, channels, slot),
    );
    const received = await waitFor(
      () => deliveries(consumers).received >= slots.length * opts.schedulers,
      opts.timeoutS * 1000,
      20,
    );
    const machine = cpuSince(machineBefore);
    const own = process.cpuUsage(cpuBefore[0]);
    const consumerCpu = consumers.reduce(
      (sum, c, i) => sum + cpuSeconds(c.child.pid) - cpuBefore[1][i],
      0,
    );
    const report = await ledgerReport(db, slot);
    const times = deliveries(consumers);
    return {
      run: 'floor',
      slot: slot.toISOString(),
      finished: received,
      claimed: report.claimed,
      first_claim_s: report.first_claim_s,
      last_claim_s: report.last_claim_s,
      first_confirm_s: report.first_confirm_s,
      last_confirm_s: report.last_confirm_s,
      confirm_p50_s: report.confirm_p50_s,
      last_received_s: received
        ? seconds((times.last - slot.getTime()) / 1000)
        : null,
      consumer_channels: opts.consumers * opts.channels,
      publish_channels: opts.floorPublishChannels,
      ...(opts.producerNice === undefined ? {} : {nice: opts.producerNice}),
      cpu_s: {
        'claim+publish': +((own.user + own.system) / 1e6).toFixed(2),
        consumer: +consumerCpu.toFixed(2),
        ...machine,
      },
    };
  } finally {
    await stopAll(children);
    await connection.close().catch(() => undefined);
    await db.end();
    await env.remove();
  }
}

module.exports = {publishPart, runFloor};
