'use strict';
// BullMQ job schedulers on the same machine: a private redis-server without
// persistence on a free port (never the shared one), N job schedulers with
// the pattern `* * * * *` and C worker processes of concurrency 1 running
// no-op jobs. A job's start is its `processedOn`.
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const {spawn} = require('node:child_process');
const {Queue} = require('bullmq');
const {
  cpuSeconds,
  cpuSince,
  machineCpu,
  stopAll,
} = require('../service-processes');
const {
  nextBoundary,
  seconds,
  sleep,
  startPercentiles,
  waitFor,
  waitForWarmMinute,
} = require('./common');

const QUEUE = 'pipeline';
const UPSERTS_AT_ONCE = 200;

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const {port} = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function startRedis(dir) {
  const port = await freePort();
  const child = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      dir,
    ],
    {stdio: ['ignore', 'pipe', 'inherit']},
  );
  let out = '';
  child.stdout.on(
    'data',
    chunk => (out = (out + chunk.toString()).slice(-4096)),
  );
  if (
    !(await waitFor(
      () => out.includes('Ready to accept connections'),
      15_000,
      50,
    ))
  ) {
    child.kill('SIGTERM');
    throw new Error(`redis-server did not start: ${out}`);
  }
  return {child, port};
}

function startWorker(port, concurrency) {
  const child = spawn(
    process.execPath,
    [
      path.join(__dirname, 'bullmq-worker.js'),
      String(port),
      QUEUE,
      String(concurrency),
    ],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  child.ready = new Promise(resolve =>
    child.stdout.on(
      'data',
      chunk => chunk.toString().includes('ready') && resolve(),
    ),
  );
  return child;
}

/** opts: schedulers, consumers, bullmqConcurrency, timeoutS, warmMinutes. */
async function runBullmq(opts) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-pipeline-redis-'));
  const children = [];
  let queue;
  try {
    const redis = await startRedis(dir);
    children.push(redis.child);
    queue = new Queue(QUEUE, {
      connection: {host: '127.0.0.1', port: redis.port},
    });
    const workers = Array.from({length: opts.consumers}, () =>
      startWorker(redis.port, opts.bullmqConcurrency),
    );
    children.push(...workers);
    await Promise.all(workers.map(w => w.ready));
    // Far enough ahead to create every scheduler before it; each is told to
    // start just before the slot, so all first jobs are due at the slot.
    // The first minute fired; the warm-up minutes run before the measured one.
    const first = nextBoundary(30_000);
    const slot = new Date(first.getTime() + opts.warmMinutes * 60_000);
    const startDate = new Date(first.getTime() - 1000);
    for (let i = 0; i < opts.schedulers; i += UPSERTS_AT_ONCE) {
      await Promise.all(
        Array.from(
          {length: Math.min(UPSERTS_AT_ONCE, opts.schedulers - i)},
          (_, k) =>
            queue.upsertJobScheduler(
              `scheduler-${i + k}`,
              {pattern: '* * * * *', startDate},
              {name: 'noop', data: {n: i + k}},
            ),
        ),
      );
    }
    if (Date.now() > startDate.getTime()) {
      throw new Error('creating the BullMQ job schedulers took past the slot');
    }
    for (let i = 1; i <= opts.warmMinutes; i++) {
      await waitForWarmMinute(
        async () =>
          (await queue.getJobCounts('completed')).completed >=
          i * opts.schedulers,
        new Date(first.getTime() + (i - 1) * 60_000),
      );
    }
    await sleep(slot.getTime() - Date.now() - 50);
    const pids = [redis.child, ...workers].map(c => c.pid);
    const cpuBefore = pids.map(cpuSeconds);
    const machineBefore = machineCpu();
    const finished = await waitFor(
      async () =>
        (await queue.getJobCounts('completed')).completed >=
        (opts.warmMinutes + 1) * opts.schedulers,
      opts.timeoutS * 1000,
      200,
    );
    const cpuAfter = pids.map(cpuSeconds);
    const {machine_busy: machineBusy} = cpuSince(machineBefore);
    const cpu = {'redis-server': +(cpuAfter[0] - cpuBefore[0]).toFixed(2)};
    workers.forEach(
      (_, i) =>
        (cpu[`worker-${i + 1}`] = +(cpuAfter[i + 1] - cpuBefore[i + 1]).toFixed(
          2,
        )),
    );
    const jobs = (await queue.getJobs(['completed'], 0, -1)).filter(
      job =>
        job.processedOn >= slot.getTime() - 1000 &&
        job.processedOn < slot.getTime() + 60_000,
    );
    const starts = jobs.map(job => (job.processedOn - slot.getTime()) / 1000);
    const finishes = jobs.map(job => (job.finishedOn - slot.getTime()) / 1000);
    const firstStart = Math.min(...starts);
    const lastFinish = Math.max(...finishes);
    return {
      run: 'bullmq',
      concurrency: opts.bullmqConcurrency,
      slot: slot.toISOString(),
      // The count above is of every minute: this one's jobs must all be in.
      finished: finished && jobs.length >= opts.schedulers,
      succeeded: jobs.length,
      ...startPercentiles(starts),
      last_finish_s: seconds(lastFinish),
      tasks_per_s: Math.round(jobs.length / (lastFinish - firstStart)),
      cpu_s: {...cpu, machine_busy: machineBusy},
    };
  } finally {
    await queue?.close().catch(() => undefined);
    // Workers first: a worker whose Redis is gone retries and complains.
    await stopAll(children.slice(1));
    await stopAll(children.slice(0, 1));
    fs.rmSync(dir, {recursive: true, force: true});
  }
}

module.exports = {runBullmq};
