#!/usr/bin/env node
// Pipeline benchmark, minute boundary to task start:
//   npm run bench:pipeline -- [--schedulers 10000] [--consumers 1]
//     [--channels 32] [--mode service|floor] [--compare bullmq]
//     [--compare floor] [--bullmq-concurrency 1] [--round-trips]
//     [--profile DIR] [--timeout 180] [--warm-minutes 0]
//     [--floor-publish-channels 1] [--producer-nice N]
// --mode service (default): real `start:scheduler` and C `start:worker`
//   processes on the bench's own database and vhost, each worker with
//   --channels consumer channels (CRON_WORKER_CHANNELS; prefetch 1, one task
//   at a time each); N reminder schedulers (one recipient) due in the same
//   minute. Reports from the run ledger: first and last claim, first and last confirm, start
//   p50/p99/max, starts per quarter second, last finish, tasks/s, and the CPU
//   seconds of each process, PostgreSQL (by role) and RabbitMQ.
// --mode floor: a bare claim + publish-with-confirm loop and a bare acking
//   consumer, no application: the dispatch-lag floor. It publishes on one
//   confirm channel, as it always has; --floor-publish-channels K spreads
//   the runs over K, as the producer's AMQP_PUBLISH_CHANNELS (default 4).
// --compare bullmq|floor (repeatable): the same N and C, in the same
//   invocation, after the main run; prints the ratios. BullMQ's C workers
//   run --bullmq-concurrency jobs at a time (the comparison: 1).
// --round-trips: counts the consumers' PostgreSQL round trips (a proxy).
// --profile DIR: the service processes write --cpu-prof profiles to DIR.
// --warm-minutes W (0 to 5): every run (service, floor, BullMQ alike) first
//   fires the same N runs at the W minute boundaries before the measured
//   one, as a deployment that has been running does (JIT-compiled paths,
//   warm pools and caches), and reports the last minute only (its
//   warnings_and_errors and --profile still cover the whole run). Each
//   warm-up minute must be done a second before the next boundary, or the
//   run stops with an error. 0 (default): the processes' first minute, cold.
// --producer-nice N (-20 to 19): the producer runs at that CPU priority
//   (PROCESS_NICE, as a deployment that shares the host with its workers
//   would set it), and so does the floor's claim + publish; consumers of
//   both, and BullMQ (which has no producer process), stay as started.
//   Negative values need root or CAP_SYS_NICE, and the = form
//   (--producer-nice=-10).
// Extra settings of the workers come from PIPELINE_WORKER_ENV
// (JSON, after --channels), e.g. PIPELINE_WORKER_ENV='{"LOG_LEVEL":"warn"}';
// the producer's from PIPELINE_PRODUCER_ENV, e.g. '{"AMQP_PUBLISH_CHANNELS":"1"}'.
'use strict';
const os = require('node:os');
const path = require('node:path');
const {parseArgs} = require('node:util');
const {runService} = require('./pipeline/service-run');
const {runFloor} = require('./pipeline/floor-run');
const {integer} = require('../../dist/config/parsers');
const {NICE_MAX, NICE_MIN} = require('../../dist/process/process-priority');

const fail = message => {
  process.stderr.write(`${message}\n`);
  process.exit(2);
};

/** parseArgs, its refusals as one line (a negative value needs --flag=-10). */
function parseArgsOrFail(config) {
  try {
    return parseArgs(config);
  } catch (error) {
    return fail(`${error.message} (a negative value: --producer-nice=-10)`);
  }
}

const {values} = parseArgsOrFail({
  options: {
    schedulers: {type: 'string', default: '10000'},
    consumers: {type: 'string', default: '1'},
    channels: {type: 'string', default: '32'},
    'bullmq-concurrency': {type: 'string', default: '1'},
    mode: {type: 'string', default: 'service'},
    compare: {type: 'string', multiple: true, default: []},
    'round-trips': {type: 'boolean', default: false},
    profile: {type: 'string'},
    timeout: {type: 'string', default: '180'},
    'warm-minutes': {type: 'string', default: '0'},
    'floor-publish-channels': {type: 'string', default: '1'},
    'producer-nice': {type: 'string'},
  },
});
const opts = {
  schedulers: Number(values.schedulers),
  consumers: Number(values.consumers),
  channels: Number(values.channels),
  bullmqConcurrency: Number(values['bullmq-concurrency']),
  floorPublishChannels: Number(values['floor-publish-channels']),
  timeoutS: Number(values.timeout),
  warmMinutes: /^[0-5]$/.test(values['warm-minutes'])
    ? Number(values['warm-minutes'])
    : NaN,
  roundTrips: values['round-trips'],
  profileDir: values.profile && path.resolve(values.profile),
  consumerEnv: {},
  producerEnv: {},
};
const FLAGS = {
  schedulers: 'schedulers',
  consumers: 'consumers',
  channels: 'channels',
  bullmqConcurrency: 'bullmq-concurrency',
  floorPublishChannels: 'floor-publish-channels',
  timeoutS: 'timeout',
};
for (const [name, flag] of Object.entries(FLAGS)) {
  if (!Number.isInteger(opts[name]) || opts[name] < 1) {
    fail(`--${flag} must be a positive integer`);
  }
}
if (Number.isNaN(opts.warmMinutes)) fail('--warm-minutes takes 0 to 5');
if (opts.channels > 32) fail('--channels takes 1 to 32 (CRON_WORKER_CHANNELS)');
opts.consumerEnv.CRON_WORKER_CHANNELS = String(opts.channels);
if (!['service', 'floor'].includes(values.mode))
  fail('--mode must be service or floor');
for (const other of values.compare) {
  if (!['bullmq', 'floor'].includes(other) || other === values.mode) {
    fail('--compare takes bullmq or floor (not the --mode itself)');
  }
}
/** Settings from the JSON object in environment variable `name`, into `into`. */
function extraSettings(name, into) {
  if (!process.env[name]) return;
  try {
    const extra = JSON.parse(process.env[name]);
    for (const [key, value] of Object.entries(extra)) {
      if (!/^[A-Z][A-Z0-9_]*$/.test(key) || typeof value !== 'string')
        throw new Error(key);
      into[key] = value;
    }
  } catch (error) {
    fail(`${name} must be a JSON object of string settings (${error.message})`);
  }
}
extraSettings('PIPELINE_WORKER_ENV', opts.consumerEnv);
extraSettings('PIPELINE_PRODUCER_ENV', opts.producerEnv);
if (values['producer-nice'] !== undefined) {
  if (opts.producerEnv.PROCESS_NICE !== undefined) {
    fail('--producer-nice and PIPELINE_PRODUCER_ENV PROCESS_NICE: give one');
  }
  opts.producerEnv.PROCESS_NICE = values['producer-nice'];
}
// However given, the floor's claim + publish runs at the producer's
// priority, read as the service reads PROCESS_NICE.
if (opts.producerEnv.PROCESS_NICE) {
  try {
    opts.producerNice = integer(NICE_MIN, NICE_MAX)(
      opts.producerEnv.PROCESS_NICE,
      'PROCESS_NICE',
    );
  } catch (error) {
    fail(`--producer-nice: ${error.message} (--producer-nice=-10)`);
  }
}

const RUNNERS = {
  service: () => runService(opts),
  floor: () => runFloor(opts),
  // Loaded only when asked: a devDependency.
  bullmq: () => require('./pipeline/bullmq-run').runBullmq(opts),
};

const ratio = (a, b) =>
  a == null || b == null || b === 0 ? null : +(a / b).toFixed(2);

async function main() {
  const loadBefore = os.loadavg().map(l => +l.toFixed(2));
  const runs = {};
  for (const name of [values.mode, ...values.compare]) {
    process.stderr.write(
      `bench:pipeline: ${name} run (waits for a minute boundary)\n`,
    );
    runs[name] = await RUNNERS[name]();
  }
  const primary = runs[values.mode];
  const ratios = {};
  if (runs.bullmq && primary.start_max_s !== undefined) {
    ratios.last_start_vs_bullmq = ratio(
      primary.start_max_s,
      runs.bullmq.start_max_s,
    );
    ratios.start_p50_vs_bullmq = ratio(
      primary.start_p50_s,
      runs.bullmq.start_p50_s,
    );
  }
  if (runs.floor && values.mode !== 'floor') {
    ratios.last_confirm_vs_floor = ratio(
      primary.last_confirm_s,
      runs.floor.last_confirm_s,
    );
  }
  process.stdout.write(
    `${JSON.stringify(
      {
        benchmark: 'pipeline',
        schedulers: opts.schedulers,
        consumers: opts.consumers,
        channels_per_consumer: Number(opts.consumerEnv.CRON_WORKER_CHANNELS),
        warm_minutes: opts.warmMinutes,
        worker_env: opts.consumerEnv,
        producer_env: opts.producerEnv,
        runs,
        ratios,
        machine: {
          cpus: os.cpus().length,
          model: os.cpus()[0]?.model.trim(),
          node: process.version,
          load_average_before: loadBefore,
          load_average_after: os.loadavg().map(l => +l.toFixed(2)),
        },
      },
      null,
      2,
    )}\n`,
  );
}

main().catch(error => {
  process.stderr.write(`bench:pipeline failed: ${error.stack}\n`);
  process.exit(1);
});
