'use strict';
// The service itself: one real `start:scheduler` and C real `start:worker`
// processes on the bench's own database and vhost; times from the run ledger.
const {Client} = require('pg');
const {createBenchEnvironment} = require('../bench-environment');
const {
  countingProxy,
  cpuSeconds,
  cpuSince,
  machineCpu,
  startRole,
  stopAll,
} = require('../service-processes');
const {
  NEVER_DUE,
  dueOnlyAt,
  ledgerReport,
  minutesFrom,
  nextBoundary,
  seedReminderSchedulers,
  sleep,
  waitFor,
  waitForWarmMinute,
} = require('./common');

/** Committed transactions of one database so far (round trips that wrote or read). */
async function transactions(db) {
  const {rows} = await db.query(
    `SELECT xact_commit::bigint AS n FROM pg_stat_database WHERE datname = current_database()`,
  );
  return Number(rows[0].n);
}

/**
 * CPU seconds so far of this database's server backends, by the
 * application_name of their client (each role's processes set PGAPPNAME):
 * PostgreSQL's work on behalf of the producer and of each consumer.
 */
async function backendCpu(db) {
  const {rows} = await db.query(
    `SELECT pid, application_name AS app FROM pg_stat_activity
      WHERE datname = current_database() AND pid <> pg_backend_pid()`,
  );
  return new Map(rows.map(r => [r.pid, {app: r.app, cpu: cpuSeconds(r.pid)}]));
}

/** What each role's backends used between two `backendCpu` snapshots. */
function backendCpuSince(before, after) {
  const used = {};
  for (const [pid, {app, cpu}] of after) {
    const key = `postgresql:${app || 'other'}`;
    used[key] = +((used[key] ?? 0) + cpu - (before.get(pid)?.cpu ?? 0)).toFixed(
      2,
    );
  }
  return used;
}

/** Runs of `slot` that succeeded so far. */
async function succeededAt(db, slot) {
  const {rows} = await db.query(
    `SELECT count(*)::int AS n FROM scheduler_execution
      WHERE slot = $1 AND status = 'succeeded'`,
    [slot],
  );
  return rows[0].n;
}

/** Lets the warm-up minutes fire; each one's runs all succeed in its minute. */
async function warmUp(db, slots, opts) {
  for (const slot of slots) {
    await sleep(slot.getTime() - Date.now());
    await waitForWarmMinute(
      async () => (await succeededAt(db, slot)) >= opts.schedulers,
      slot,
    );
  }
}

/**
 * opts: schedulers, consumers, timeoutS, consumerEnv (extra settings of the
 * workers), roundTrips (count the consumers' database round trips through a
 * proxy), profileDir (write --cpu-prof profiles of every process there),
 * warmMinutes (minutes fired before the measured one).
 */
async function runService(opts) {
  const env = await createBenchEnvironment();
  const db = new Client({connectionString: env.databaseUrl});
  await db.connect();
  const procs = [];
  const proxies = [];
  try {
    // Due only at the measured slot (and the warm-up minutes before it): a
    // minute the processes met while starting would otherwise queue a whole
    // batch ahead of it.
    await seedReminderSchedulers(db, opts.schedulers, NEVER_DUE);
    const started = new Set();
    // Warnings and errors per process, and the first of each: a run that
    // stalls says why (a database refusing connections, say).
    const trouble = {};
    const onLine = name => line => {
      if (line.includes('"Service started"')) started.add(name);
      const level = /^\{"level":"(warn|error)"/.exec(line)?.[1];
      if (level) {
        trouble[name] ??= {warn: 0, error: 0};
        trouble[name][level]++;
        trouble[name][`first_${level}`] ??= line.slice(0, 300);
      }
    };
    const nodeFlags = opts.profileDir
      ? ['--cpu-prof', `--cpu-prof-dir=${opts.profileDir}`]
      : [];
    const role = (mode, name, databaseUrl, extra = {}) =>
      procs.push({
        name,
        child: startRole(
          mode,
          name,
          {
            DATABASE_URL: databaseUrl,
            AMQP_URL: env.amqpUrl,
            PGAPPNAME: name,
            ...extra,
          },
          onLine(name),
          nodeFlags,
        ),
      });
    role('scheduler', 'producer', env.databaseUrl, opts.producerEnv);
    for (let i = 1; i <= opts.consumers; i++) {
      let url = env.databaseUrl;
      if (opts.roundTrips) {
        const proxy = await countingProxy(Number(new URL(url).port || 5432));
        proxies.push(proxy);
        const proxied = new URL(url);
        proxied.host = `127.0.0.1:${proxy.port}`;
        url = proxied.toString();
      }
      role('worker', `consumer-${i}`, url, opts.consumerEnv);
    }
    if (!(await waitFor(() => started.size === procs.length, 60_000, 100))) {
      throw new Error('the service processes did not start');
    }
    const slots = minutesFrom(nextBoundary(10_000), opts.warmMinutes + 1);
    const slot = slots[slots.length - 1];
    await dueOnlyAt(db, slots);
    if (Date.now() >= slots[0].getTime()) {
      throw new Error('making the schedulers due took past the slot');
    }
    await warmUp(db, slots.slice(0, -1), opts);
    await sleep(slot.getTime() - Date.now() - 50);
    const cpuBefore = procs.map(p => cpuSeconds(p.child.pid));
    const machineBefore = machineCpu();
    const backendsBefore = await backendCpu(db);
    const burstsBefore = proxies.map(p => p.counter.bursts);
    const xactBefore = await transactions(db);
    const countDone = async () =>
      (await succeededAt(db, slot)) >= opts.schedulers;
    const finished = await waitFor(countDone, opts.timeoutS * 1000, 200);
    const machine = cpuSince(machineBefore);
    const backends = backendCpuSince(backendsBefore, await backendCpu(db));
    // The producer records each confirm's time after the broker's answer:
    // fast consumers can be done first. The report waits for those marks.
    await waitFor(
      async () => {
        const {rows} = await db.query(
          `SELECT count(*)::int AS n FROM scheduler_execution
            WHERE slot = $1 AND published_at IS NOT NULL`,
          [slot],
        );
        return rows[0].n >= opts.schedulers;
      },
      10_000,
      100,
    );
    const cpu = Object.fromEntries(
      procs.map((p, i) => [
        p.name,
        +(cpuSeconds(p.child.pid) - cpuBefore[i]).toFixed(2),
      ]),
    );
    const xact = (await transactions(db)) - xactBefore;
    const report = await ledgerReport(db, slot);
    const bursts = proxies.reduce(
      (s, p, i) => s + p.counter.bursts - burstsBefore[i],
      0,
    );
    return {
      run: 'service',
      slot: slot.toISOString(),
      finished,
      ...report,
      cpu_s: {...cpu, ...machine, ...backends},
      warnings_and_errors: trouble,
      db_transactions_per_task: +(xact / opts.schedulers).toFixed(2),
      ...(opts.roundTrips
        ? {
            consumer_db_round_trips_per_task: +(
              bursts / opts.schedulers
            ).toFixed(2),
          }
        : {}),
    };
  } finally {
    await stopAll(procs.map(p => p.child));
    for (const proxy of proxies) proxy.server.close();
    await db.end();
    await env.remove();
  }
}

module.exports = {runService};
