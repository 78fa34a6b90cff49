'use strict';
// The floor: what PostgreSQL and RabbitMQ cost with no application around
// them. At the boundary (+100 ms, as the producer's ticker) one INSERT claims
// every due run, each is published on a confirm channel (persistent,
// mandatory), one UPDATE records every confirm's time as `published_at`;
// a bare consumer process acks with C channels of prefetch 1.
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
const {
  amqpSocketOf,
  coalesceTurnWrites,
} = require('../../../dist/queue/turn-writes');
const {
  ledgerReport,
  nextBoundary,
  seedReminderSchedulers,
  seconds,
  sleep,
  waitFor,
} = require('./common');

const AFTER_BOUNDARY_MS = 100;

async function claimAndPublish(db, channel, slot) {
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
  const confirms = [];
  for (let i = 0; i < rows.length; i++) {
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
          {
            persistent: true,
            mandatory: true,
            headers: {'x-execution-id': Number(id)},
          },
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
  await db.query(
    `UPDATE scheduler_execution e
        SET published_at = c.at, status = 'published'
       FROM unnest($1::bigint[], $2::timestamptz[]) AS c(id, at)
      WHERE e.id = c.id`,
    [rows.map(r => r.id), confirmedAt],
  );
}

/** opts: schedulers, consumers, timeoutS. */
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
    const channel = await connection.createConfirmChannel();
    const consumer = spawn(
      process.execPath,
      [
        path.join(__dirname, 'floor-consumer.js'),
        env.amqpUrl,
        String(opts.schedulers),
        String(opts.consumers),
      ],
      {stdio: ['ignore', 'pipe', 'inherit']},
    );
    children.push(consumer);
    const lines = [];
    consumer.stdout.on('data', chunk =>
      lines.push(...chunk.toString().split('\n').filter(Boolean)),
    );
    if (!(await waitFor(() => lines.includes('ready'), 30_000, 50))) {
      throw new Error('the floor consumer did not start');
    }
    const slot = nextBoundary(2000);
    await sleep(slot.getTime() - Date.now() - 50);
    const cpuBefore = [process.cpuUsage(), cpuSeconds(consumer.pid)];
    const machineBefore = machineCpu();
    await sleep(slot.getTime() + AFTER_BOUNDARY_MS - Date.now());
    await claimAndPublish(db, channel, slot);
    const received = await waitFor(
      () => lines.length > 1,
      opts.timeoutS * 1000,
      20,
    );
    const machine = cpuSince(machineBefore);
    const own = process.cpuUsage(cpuBefore[0]);
    const consumerCpu = cpuSeconds(consumer.pid) - cpuBefore[1];
    const report = await ledgerReport(db, slot);
    const times = received ? JSON.parse(lines[1]) : {};
    return {
      run: 'floor',
      slot: slot.toISOString(),
      finished: received,
      claimed: report.claimed,
      last_claim_s: report.last_claim_s,
      last_confirm_s: report.last_confirm_s,
      confirm_p50_s: report.confirm_p50_s,
      last_received_s: received
        ? seconds((times.last - slot.getTime()) / 1000)
        : null,
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

module.exports = {runFloor};
