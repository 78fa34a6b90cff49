import {randomInt} from 'node:crypto';
import {writeFileSync} from 'node:fs';
import {cpus, loadavg, totalmem} from 'node:os';
import path from 'node:path';
import {Client, escapeIdentifier} from 'pg';
import {PROJECT_ROOT} from '../../config';
import {minuteSlot, addMinutes} from '../../scheduling/slots';
import {TcpProxy} from '../fixtures/tcp-proxy';
import {
  closeConsumerChannels,
  TEST_RETRY,
  TEST_RETRY_ENV,
} from '../fixtures/test-broker';
import {createChaosEnvironment} from './chaos-environment';
import {checkLedger, FaultWindow, Violation} from './chaos-invariants';
import {CONSUMERS, FaultKind, planFaults, PRODUCERS} from './chaos-plan';
import {ChaosOptions, ChaosProfile, parseChaosArgs} from './chaos-profile';
import {FAILED_QUEUE, REPORT_QUEUE, TASK_QUEUE} from '../../queue/topology';
import {PeakRss} from './peak-rss';
import {queueDepths} from './queue-depths';
import {SeededRandom} from './seeded-random';
import {writeReliability} from './reliability-report';
import {readSideEffects} from './side-effects';
import {FaultInjector} from './fault-injector';
import {log, sleep, waitFor} from './wait';
import {SupervisedProcess} from './supervised-process';

const WORKERS_DIR = path.join(PROJECT_ROOT, 'scripts/chaos/workers');
/** Run time limit of the flood workers (the endless one ends by it). */
const FLOOD_TIMEOUT_MS = 20_000;
/** Real time a crashed process stays down before its restart. */
const RESTART_DELAY_MS = 1000;
/** Real time after which a claim left unpublished is swept. */
const SWEEP_AFTER_REAL_MS = 4000;
/** Real time after which a dead producer's slot lease is taken over. */
const SLOT_LEASE_REAL_MS = 2000;
/** Real time without a sign of a run's message after which it is sent again. */
const LOST_RUN_GRACE_REAL_MS = 15_000;
/**
 * How long a consumer kill waits for its target to be inside a task, in
 * simulated minutes (work arrives in a burst each minute).
 */
const MID_TASK_WAIT_MINUTES = 2;

/** Everything a run holds that must be released, on success, failure or signal. */
class Cluster {
  readonly processes: SupervisedProcess[] = [];
  readonly proxies: TcpProxy[] = [];
  async close(): Promise<void> {
    await Promise.allSettled(this.processes.map(p => p.close()));
    await Promise.allSettled(this.proxies.map(p => p.close()));
  }
}

export async function seedSchedulers(
  db: Client,
  profile: Pick<
    ChaosProfile,
    'schedulers' | 'failingEvery' | 'orphanEvery' | 'floodWorkers'
  >,
  sideEffectFile: string,
  firstSlot: Date,
): Promise<void> {
  const {rows} = await db.query<{id: number}>(
    `INSERT INTO worker (name, command) VALUES ('chaos', 'chaos-worker') RETURNING id`,
  );
  await db.query(
    `INSERT INTO scheduler (description, schedule, worker_id, params, activated_at)
     SELECT 'chaos ' || n, '* * * * *', $2,
            CASE WHEN n % $3 = 0
              THEN jsonb_build_object('out', $4::text, 'fail', 'always')
              WHEN n % $6 = 1
              THEN jsonb_build_object('out', $4::text, 'orphan', '1')
              ELSE jsonb_build_object('out', $4::text) END,
            $5
       FROM generate_series(1, $1::int) AS n`,
    // Active from the first simulated minute, which starts before the insert.
    [
      profile.schedulers,
      rows[0].id,
      profile.failingEvery,
      sideEffectFile,
      firstSlot,
      profile.orphanEvery,
    ],
  );
  if (profile.floodWorkers) {
    // Their own worker: the endless one must end by a timeout, not CRON_TASK_TIMEOUT_MS.
    const {rows: flood} = await db.query<{id: number}>(
      `INSERT INTO worker (name, command, timeout_ms)
       VALUES ('chaos-flood', 'chaos-worker', $1) RETURNING id`,
      [FLOOD_TIMEOUT_MS],
    );
    await db.query(
      `INSERT INTO scheduler (description, schedule, worker_id, params, activated_at)
       SELECT 'chaos flood ' || kind, '* * * * *', $1,
              jsonb_build_object('out', $2::text, 'flood', kind), $3
         FROM unnest(ARRAY['line', 'endless']) AS kind`,
      [flood[0].id, sideEffectFile, firstSlot],
    );
  }
  // Producers start from the first simulated minute, not a catch-up window.
  await db.query(
    `INSERT INTO producer_state (name, last_slot) VALUES ('ticks', $1)`,
    [addMinutes(firstSlot, -1)],
  );
}

/** A URL with its host replaced by a local proxy's port. */
function throughProxy(url: string, proxy: TcpProxy): string {
  const proxied = new URL(url);
  proxied.host = `127.0.0.1:${proxy.port}`;
  return proxied.toString();
}

export function serviceEnv(
  name: string,
  links: {databaseUrl: string; amqpUrl: string},
  clock: {origin: Date; scale: number},
  triggerFile: string,
): Record<string, string> {
  const producer = name.startsWith('producer');
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    NODE_ENV: 'test',
    LOG_LEVEL: 'info',
    SERVICE_NAME: `chaos-${name}`,
    APP_MODE: producer ? 'scheduler' : 'worker',
    PORT: '0',
    DATABASE_URL: links.databaseUrl,
    AMQP_URL: links.amqpUrl,
    ...TEST_RETRY_ENV,
    WORKERS_DIR,
    // Even a 20 s outage of every producer stays inside the catch-up window.
    CRON_CATCHUP_MINUTES: '30',
    CRON_SWEEP_AFTER_MS: String(Math.round(SWEEP_AFTER_REAL_MS * clock.scale)),
    // Real ms, from the database's clock: a producer killed inside its slot
    // is taken over well within a simulated minute's real length.
    CRON_SLOT_LEASE_MS: String(SLOT_LEASE_REAL_MS),
    CRON_SHUTDOWN_GRACE_MS: '5000',
    // Real ms: a message the broker loses (the fleet profile's stopped queue
    // leader once stranded three retries) is sent again within the drain.
    CRON_LOST_RUN_GRACE_MS: String(LOST_RUN_GRACE_REAL_MS),
    // Tasks still run one at a time; the next ones wait in the consumer
    // instead of a broker round trip away.
    CRON_WORKER_PREFETCH: '10',
    ...(producer
      ? {
          CHAOS_CLOCK_SCALE: String(clock.scale),
          CHAOS_CLOCK_ORIGIN: clock.origin.toISOString(),
          CHAOS_KILL_AFTER_CLAIM_FILE: triggerFile,
        }
      : {}),
  };
}

export async function runChaos(options: ChaosOptions): Promise<number> {
  const {profile, seed} = options;
  const started = Date.now();
  const random = new SeededRandom(seed);
  log(
    `profile ${profile.name}, seed ${seed} (reproduce: npm run test:chaos -- ${
      profile.name === 'full' ? '--full ' : ''
    }--seed ${seed})`,
  );
  const environmentReady = createChaosEnvironment();
  // Replaced by the connected client once the database exists.
  let db = new Client();
  let dbConnected = false;
  const cluster = new Cluster();
  const consumerMemory = new PeakRss();
  let failed = true;
  // Registered before anything exists, so an interrupt at any point still
  // stops the processes and removes the database and vhost.
  const onSignal = (signal: NodeJS.Signals) => {
    log(`${signal}: stopping processes, removing database and vhost`);
    environmentReady
      .then(async environment => {
        if (dbConnected) await db.end().catch(() => undefined);
        await cluster.close();
        await environment.remove({keepDir: false});
      })
      .then(
        () => process.exit(130),
        error => {
          log(`cleanup failed: ${(error as Error).message}`);
          process.exit(130);
        },
      );
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const environment = await environmentReady;
  try {
    db = new Client({connectionString: environment.databaseUrl});
    // Dropping the database at the end closes this connection server-side.
    db.on('error', () => undefined);
    await db.connect();
    dbConnected = true;
    // The suite cuts connections but never crashes PostgreSQL itself, and
    // only a server crash can lose an asynchronously committed transaction:
    // so the ledger's per-task commits skip the fsync wait, which on this
    // shared 2-core machine otherwise bounds the consumers' pace.
    await db.query(
      `ALTER DATABASE ${escapeIdentifier(db.database!)} SET synchronous_commit = off`,
    );
    const sideEffectFile = path.join(environment.dir, 'side-effects.log');
    const triggerFile = path.join(environment.dir, 'kill-after-claim');
    // Simulated time starts when the processes are up; all producers share it.
    const origin = new Date(Date.now() + 5000);
    const clock = {origin, scale: profile.clockScale};
    const firstSlot = minuteSlot(origin);
    const lastSlot = addMinutes(firstSlot, profile.simulatedMinutes - 1);
    await seedSchedulers(db, profile, sideEffectFile, firstSlot);
    const {host: pgHost, port: pgPort} = new URL(environment.databaseUrl);
    const {host: mqHost, port: mqPort} = new URL(environment.amqpUrl);
    // The supervisor asks it about SIGKILLs the suite did not send.
    const injector = new FaultInjector(
      cluster.processes,
      triggerFile,
      (MID_TASK_WAIT_MINUTES * 60_000) / profile.clockScale,
      () => closeConsumerChannels(environment.vhost),
    );
    for (const name of [...PRODUCERS, ...CONSUMERS]) {
      const links = {
        database: new TcpProxy(
          new URL(`x://${pgHost}`).hostname,
          Number(pgPort || 5432),
        ),
        broker: new TcpProxy(
          new URL(`x://${mqHost}`).hostname,
          Number(mqPort || 5672),
        ),
      };
      await links.database.start();
      await links.broker.start();
      cluster.proxies.push(links.database, links.broker);
      const proc = new SupervisedProcess(
        name,
        links,
        serviceEnv(
          name,
          {
            databaseUrl: throughProxy(environment.databaseUrl, links.database),
            amqpUrl: throughProxy(environment.amqpUrl, links.broker),
          },
          clock,
          triggerFile,
        ),
        path.join(environment.dir, `${name}.log`),
        RESTART_DELAY_MS,
        injector.claimFaultFired,
      );
      cluster.processes.push(proc);
      proc.start();
    }
    await waitFor('every process to start', 30_000, () =>
      cluster.processes.every(p => p.lastSeen.has('Service started')),
    );
    log(
      `${profile.schedulers} schedulers due every minute, ${profile.simulatedMinutes} simulated minutes from ${firstSlot.toISOString()} at ${profile.clockScale}x; 3 producers, 2 consumers`,
    );

    // Faults are timed from the simulated start, or from when the last
    // process came up if the start took longer than the lead, and fall
    // before the last simulated minute is claimed.
    const phaseStart = Math.max(origin.getTime(), Date.now());
    const phaseMs =
      (lastSlot.getTime() - origin.getTime()) / profile.clockScale -
      (phaseStart - origin.getTime());
    const plan = planFaults(profile, phaseMs, random);
    consumerMemory.watch(() =>
      cluster.processes.filter(p => CONSUMERS.includes(p.name)),
    );
    const linkFaults: Array<Promise<void>> = [];
    for (const fault of plan) {
      linkFaults.push(
        sleep(Math.max(0, phaseStart + fault.atMs - Date.now())).then(() =>
          injector.run(fault),
        ),
      );
    }
    log(
      `planned faults: ${plan.map(f => `${f.kind}@${Math.round(f.atMs / 1000)}s`).join(', ')}`,
    );
    await Promise.all(linkFaults);
    await waitFor(
      'the simulated minutes to pass',
      phaseMs + 120_000,
      async () => {
        const {rows} = await db.query<{last_slot: Date}>(
          `SELECT last_slot FROM producer_state WHERE name = 'ticks'`,
        );
        return rows[0].last_slot >= lastSlot;
      },
    );
    await waitFor(
      'kill-after-claim triggers to fire',
      60_000,
      () => injector.armedTriggers === 0,
    );
    const injected = injector.injected;
    const faultsEnded = Math.max(...injected.map(f => f.to), phaseStart);
    // Evidence of recovery: each producer ticks again after the last fault
    // (one ticks each simulated minute; a killed one on its restart).
    await waitFor(
      'every producer to tick after the last fault',
      (2 * 60_000) / profile.clockScale + 10_000,
      () =>
        cluster.processes.every(
          p =>
            !p.name.startsWith('producer') ||
            (p.lastSeen.get('Tick completed') ?? 0) > faultsEnded,
        ),
    );
    // The user switches the schedulers off: nothing more falls due, so the
    // set of due runs is final and the system can drain.
    await db.query(`UPDATE scheduler SET status = false`);
    log('schedulers disabled; draining');
    const drained = await waitFor(
      'every run to finish and queues to empty',
      profile.drainTimeoutMs,
      async () => {
        const {rows} = await db.query<{open: number}>(
          `SELECT count(*)::int AS open FROM scheduler_execution
          WHERE status NOT IN ('succeeded', 'failed')`,
        );
        if (rows[0].open > 0) return false;
        const depths = await queueDepths(environment.vhost);
        return depths.every(q => q.ready === 0 && q.unacknowledged === 0);
      },
    );
    log(drained ? 'drained' : 'did not drain');

    const violations: Violation[] = [];
    // Recovery: every process is up and did its work after the last fault,
    // without anyone restarting it (restarts follow only the suite's kills).
    const unexpected = cluster.processes.flatMap(p =>
      p.exits
        .filter(e => e.cause === 'unexpected')
        .map(e => ({process: p.name, ...e})),
    );
    if (unexpected.length > 0) {
      violations.push({
        invariant: 'no process died unless the suite killed it',
        count: unexpected.length,
        rows: unexpected,
      });
    }
    const alive = new Map(cluster.processes.map(p => [p.name, p.alive]));
    const subscriptions = await queueDepths(environment.vhost);
    const stops = await Promise.all(
      cluster.processes.map(async p => ({
        process: p.name,
        exit: await p.stop(),
      })),
    );
    const unclean = stops.filter(s => s.exit && s.exit.code !== 0);
    if (unclean.length > 0) {
      violations.push({
        invariant: 'every process stops cleanly (exit 0 on SIGTERM)',
        count: unclean.length,
        rows: unclean,
      });
    }
    const depths = await queueDepths(environment.vhost);
    const leftInQueues = depths.filter(q => q.ready + q.unacknowledged > 0);
    if (leftInQueues.length > 0) {
      violations.push({
        invariant: 'no message is left in any queue',
        count: leftInQueues.length,
        rows: leftInQueues,
      });
    }
    const effects = readSideEffects(sideEffectFile);
    // Recovery: producers ticked after the last fault; every process is up;
    // each consumer is subscribed again to the task and the failed queue
    // (work it could not do would have kept the queues from draining).
    const stale = cluster.processes
      .filter(
        p =>
          !alive.get(p.name) ||
          (p.name.startsWith('producer') &&
            (p.lastSeen.get('Tick completed') ?? 0) < faultsEnded),
      )
      .map(p => ({
        process: p.name,
        alive_at_end: alive.get(p.name),
        last_lines: p.lines().slice(-10),
      }));
    const unsubscribed = subscriptions.filter(
      q =>
        (q.queue === TASK_QUEUE ||
          q.queue === REPORT_QUEUE ||
          q.queue === FAILED_QUEUE) &&
        q.consumers !== CONSUMERS.length,
    );
    if (unsubscribed.length > 0) {
      violations.push({
        invariant: `each of the ${CONSUMERS.length} consumers consumes the task and the failed queue again`,
        count: unsubscribed.length,
        rows: unsubscribed,
      });
    }
    if (stale.length > 0) {
      violations.push({
        invariant:
          'every process works again after the last fault (no manual restart)',
        count: stale.length,
        rows: stale,
      });
    }
    if (effects.malformed.length > 0) {
      violations.push({
        invariant: 'side-effect records are well formed',
        count: effects.malformed.length,
        rows: effects.malformed.slice(0, 20),
      });
    }
    const windows: FaultWindow[] = injected.map(f => ({
      kind: f.kind,
      from: f.at,
      to: f.to,
    }));
    const ledger = await checkLedger(db, {
      firstSlot,
      expectedLastSlot: lastSlot,
      maxRetries: TEST_RETRY.maxRetries,
      sideEffects: effects.byRun,
      faultWindows: windows,
      windowSlackMs: RESTART_DELAY_MS + SWEEP_AFTER_REAL_MS + 5000,
    });
    violations.push(...ledger.violations);
    const count = (kind: FaultKind) =>
      injected.filter(f => f.kind === kind).length;
    const report = {
      profile: profile.name,
      seed,
      schedulers: profile.schedulers,
      failing_schedulers: Math.floor(profile.schedulers / profile.failingEvery),
      simulated_minutes: ledger.figures.slots,
      clock_scale: profile.clockScale,
      real_seconds: Math.round((Date.now() - started) / 1000),
      processes: {producers: PRODUCERS.length, consumers: CONSUMERS.length},
      flood_schedulers: profile.floodWorkers ? 2 : 0,
      consumer_peak_rss_mb: consumerMemory.peakMb,
      restarts: Object.fromEntries(
        cluster.processes.map(p => [p.name, p.starts - 1]),
      ),
      faults: {
        producer_sigkill: count('producer-kill'),
        producer_sigkill_between_claim_and_publish: count(
          'producer-kill-after-claim',
        ),
        consumer_sigkill_mid_task: injected.filter(
          f => f.kind === 'consumer-kill' && f.midTask,
        ).length,
        consumer_sigkill_other: injected.filter(
          f => f.kind === 'consumer-kill' && !f.midTask,
        ).length,
        broker_cut: count('broker-cut'),
        database_cut: count('database-cut'),
        broker_stall: count('broker-stall'),
        database_stall: count('database-stall'),
        database_cut_during_outcome_mark: count('outcome-mark-cut'),
        consumer_channel_close: count('channel-close'),
        cut_seconds: injected
          .filter(f => f.to > f.at)
          .map(
            f => `${f.kind}:${f.target}:${((f.to - f.at) / 1000).toFixed(1)}`,
          ),
      },
      runs: {
        due: ledger.figures.due,
        claimed: ledger.figures.claimed,
        succeeded: ledger.figures.succeeded,
        failed: ledger.figures.failed,
        not_terminal: ledger.figures.notTerminal,
        lost: ledger.figures.lost,
        duplicate_claims: ledger.figures.duplicateClaims,
        redelivered: ledger.figures.redelivered,
        side_effect_records: effects.total,
        repeated_side_effects_after_a_fault:
          ledger.figures.repeatedSideEffects.explainedByFault,
        repeated_side_effects_unexplained:
          ledger.figures.repeatedSideEffects.unexplained,
      },
      finished_at: new Date().toISOString(),
      machine: {
        cpus: cpus().length,
        cpu_model: cpus()[0]?.model,
        memory_gib: Math.round(totalmem() / 2 ** 30),
        node: process.version,
        load_average_at_end: loadavg().map(l => l.toFixed(2)),
      },
    };
    log(`figures:\n${JSON.stringify(report, null, 2)}`);
    if (
      options.writeReliability &&
      violations.length === 0 &&
      drained &&
      profile.name === 'full'
    ) {
      writeReliability(path.join(PROJECT_ROOT, 'RELIABILITY.md'), report);
      log('figures written to RELIABILITY.md');
    }
    if (options.reportFile)
      writeFileSync(options.reportFile, JSON.stringify(report, null, 2) + '\n');
    if (violations.length > 0 || !drained) {
      for (const v of violations) {
        process.stderr.write(
          `\nINVARIANT VIOLATED: ${v.invariant} (${v.count})\n${JSON.stringify(v.rows, null, 2)}\n`,
        );
      }
      process.stderr.write(
        `\nchaos: FAILED with seed ${seed}; logs in ${environment.dir}\n`,
      );
      return 1;
    }
    failed = false;
    log(
      `passed: ${report.runs.claimed} runs, 0 lost, 0 duplicate claims (seed ${seed})`,
    );
    return 0;
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
    consumerMemory.stop();
    if (dbConnected) await db.end().catch(() => undefined);
    await cluster.close();
    // On failure the process logs stay for diagnosis; the database and vhost go.
    await environment.remove({keepDir: failed});
  }
}

if (require.main === module) {
  let options: ChaosOptions;
  try {
    options = parseChaosArgs(process.argv.slice(2), () => randomInt(2 ** 31));
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`);
    process.exit(2);
  }
  runChaos(options).then(
    code => process.exit(code),
    error => {
      process.stderr.write(`chaos: ${(error as Error).stack}\n`);
      process.exit(1);
    },
  );
}
