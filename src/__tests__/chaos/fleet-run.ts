import {randomBytes} from 'node:crypto';
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs';
import {cpus, loadavg, tmpdir} from 'node:os';
import path from 'node:path';
import {Client} from 'pg';
import {migrateDatabase} from '../../database/migration-runner';
import {FAILED_QUEUE, TASK_QUEUE} from '../../queue/topology';
import {addMinutes, minuteSlot} from '../../scheduling/slots';
import {LogCapture} from '../fixtures/log-capture';
import {PgBouncer, startPgBouncer} from '../fixtures/pgbouncer';
import {PrivatePostgres} from '../fixtures/private-postgres';
import {RabbitCluster} from '../fixtures/rabbitmq-cluster';
import {TEST_RETRY} from '../fixtures/test-broker';
import {checkLedger, FaultWindow, Violation} from './chaos-invariants';
import {seedSchedulers, serviceEnv} from './chaos-run';
import {queueDepths} from './queue-depths';
import {readSideEffects} from './side-effects';
import {SupervisedProcess} from './supervised-process';
import {log, sleep, waitFor} from './wait';

/**
 * The fleet profile of the chaos suite (issue 23, items 4 and 5): two
 * producers and two consumers on a three-node RabbitMQ cluster of the run's
 * own (AMQP_URL lists every node) and on a PostgreSQL server of its own
 * behind PgBouncer in transaction pooling mode. Mid-run the suite stops the
 * node that leads the task queue (and starts it again later), then restarts
 * the PostgreSQL server. Every due run must still be claimed exactly once
 * and reach its outcome, no process may die, and the node must rejoin.
 */
const PRODUCERS = ['producer-1', 'producer-2'];
const CONSUMERS = ['consumer-1', 'consumer-2'];
const SCHEDULERS = 60;
const SIMULATED_MINUTES = 8;
const CLOCK_SCALE = 6;
/** How long the stopped node stays down, real ms. */
const NODE_DOWN_MS = 8000;
const DRAIN_TIMEOUT_MS = 120_000;

interface FleetFault {
  kind: 'broker-node-stop' | 'database-server-restart';
  target: string;
  at: number;
  to: number;
}

export async function runFleetChaos(reportFile?: string): Promise<number> {
  const started = Date.now();
  const dir = mkdtempSync(path.join(tmpdir(), 'task-scheduler-fleet-'));
  const vhost = `fleet_${randomBytes(4).toString('hex')}`;
  const processes: SupervisedProcess[] = [];
  let cluster: RabbitCluster | undefined;
  let postgres: PrivatePostgres | undefined;
  let bouncer: PgBouncer | undefined;
  let db: Client | undefined;
  let failed = true;
  const cleanUp = async () => {
    await Promise.allSettled(processes.map(p => p.close()));
    await db?.end().catch(() => undefined);
    await bouncer?.stop().catch(() => undefined);
    await Promise.allSettled([cluster?.stop(), postgres?.stop()]);
  };
  const onSignal = () => {
    log('interrupted: stopping the fleet, its cluster and its server');
    cleanUp().then(
      () => process.exit(130),
      () => process.exit(130),
    );
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    log('starting a 3-node RabbitMQ cluster and a PostgreSQL server');
    [cluster, postgres] = await Promise.all([
      RabbitCluster.start(3),
      PrivatePostgres.start(),
    ]);
    const rabbit = cluster;
    const server = postgres;
    const directUrl = server.url('task_scheduler_fleet');
    await migrateDatabase(directUrl, new LogCapture('error').logger);
    bouncer = await startPgBouncer(directUrl, {poolSize: 6});
    await rabbit.addVhost(vhost);
    db = new Client({connectionString: directUrl});
    db.on('error', () => undefined);
    await db.connect();
    const sideEffectFile = path.join(dir, 'side-effects.log');
    const origin = new Date(Date.now() + 8000);
    const clock = {origin, scale: CLOCK_SCALE};
    const firstSlot = minuteSlot(origin);
    const lastSlot = addMinutes(firstSlot, SIMULATED_MINUTES - 1);
    await seedSchedulers(
      db,
      {
        schedulers: SCHEDULERS,
        failingEvery: 20,
        orphanEvery: 1000,
        floodWorkers: false,
      },
      sideEffectFile,
      firstSlot,
    );
    const links = {databaseUrl: bouncer.url, amqpUrl: rabbit.amqpUrl(vhost)};
    for (const name of [...PRODUCERS, ...CONSUMERS]) {
      const env = {
        ...serviceEnv(name, links, clock, path.join(dir, 'unused-trigger')),
        DATABASE_POOL_MODE: 'transaction',
        DATABASE_DIRECT_URL: directUrl,
      };
      const proc = new SupervisedProcess(
        name,
        undefined,
        env,
        path.join(dir, `${name}.log`),
        1000,
        () => false,
      );
      processes.push(proc);
      proc.start();
    }
    await waitFor('every process to start', 60_000, () =>
      processes.every(p => p.lastSeen.has('Service started')),
    );
    log(
      `${SCHEDULERS} schedulers due every minute, ${SIMULATED_MINUTES} simulated minutes at ${CLOCK_SCALE}x; 2 producers, 2 consumers`,
    );
    const phaseStart = Math.max(origin.getTime(), Date.now());
    const phaseMs =
      (lastSlot.getTime() - origin.getTime()) / CLOCK_SCALE -
      (phaseStart - origin.getTime());
    const faults: FleetFault[] = [];

    // The node that leads the task queue goes away mid-run, then comes back.
    await sleep(Math.max(0, phaseStart + phaseMs * 0.25 - Date.now()));
    const leader = await rabbit.leaderOf(vhost, TASK_QUEUE);
    const stoppedAt = Date.now();
    await rabbit.stopNode(leader);
    log(`stopped ${leader}, the leader of ${TASK_QUEUE}`);
    await sleep(NODE_DOWN_MS);
    await rabbit.startNode(leader);
    faults.push({
      kind: 'broker-node-stop',
      target: leader,
      at: stoppedAt,
      to: Date.now(),
    });
    log(`started ${leader} again`);

    // Then the database server restarts under PgBouncer.
    await sleep(Math.max(0, phaseStart + phaseMs * 0.6 - Date.now()));
    const restartAt = Date.now();
    await server.restart();
    faults.push({
      kind: 'database-server-restart',
      target: 'postgresql',
      at: restartAt,
      to: Date.now(),
    });
    log('restarted the PostgreSQL server');

    const reconnectDb = async () => {
      await db?.end().catch(() => undefined);
      db = new Client({connectionString: directUrl});
      db.on('error', () => undefined);
      await db.connect();
      return db;
    };
    const ledgerDb = await reconnectDb();
    await waitFor(
      'the simulated minutes to pass',
      phaseMs + 120_000,
      async () => {
        const {rows} = await ledgerDb.query<{last_slot: Date}>(
          `SELECT last_slot FROM producer_state WHERE name = 'ticks'`,
        );
        return rows[0].last_slot >= lastSlot;
      },
    );
    const faultsEnded = Math.max(...faults.map(f => f.to));
    await waitFor(
      'every producer to tick after the last fault',
      (2 * 60_000) / CLOCK_SCALE + 20_000,
      () =>
        processes.every(
          p =>
            !p.name.startsWith('producer') ||
            (p.lastSeen.get('Tick completed') ?? 0) > faultsEnded,
        ),
    );
    await ledgerDb.query(`UPDATE scheduler SET status = false`);
    log('schedulers disabled; draining');
    const ctl = async (args: string[]) =>
      rabbit.ctl(await rabbit.anyRunningNode(), args);
    let lastProgress = 0;
    const drained = await waitFor(
      'every run to finish and queues to empty',
      DRAIN_TIMEOUT_MS,
      async () => {
        const {rows} = await ledgerDb.query<{status: string; n: number}>(
          `SELECT status, count(*)::int AS n FROM scheduler_execution
            WHERE status NOT IN ('succeeded', 'failed') GROUP BY status`,
        );
        const depths = await queueDepths(vhost, ctl);
        if (Date.now() - lastProgress > 10_000) {
          lastProgress = Date.now();
          const open = rows.map(r => `${r.status} ${r.n}`).join(', ');
          const queued = depths
            .filter(q => q.ready + q.unacknowledged > 0)
            .map(q => `${q.queue} ${q.ready}+${q.unacknowledged}`)
            .join(', ');
          log(`draining: open runs [${open}], queues [${queued}]`);
        }
        if (rows.length > 0) return false;
        return depths.every(q => q.ready === 0 && q.unacknowledged === 0);
      },
      1000,
    );
    log(drained ? 'drained' : 'did not drain');

    const violations: Violation[] = [];
    const running = await rabbit.runningNodes();
    if (running.length !== rabbit.nodes.length) {
      violations.push({
        invariant: 'the stopped node rejoined the cluster',
        count: rabbit.nodes.length - running.length,
        rows: [{running}],
      });
    }
    const unexpected = processes.flatMap(p =>
      p.exits.map(e => ({process: p.name, ...e})),
    );
    if (unexpected.length > 0) {
      violations.push({
        invariant: 'no process died (none is killed in this profile)',
        count: unexpected.length,
        rows: unexpected,
      });
    }
    const subscriptions = await queueDepths(vhost, ctl);
    const unsubscribed = subscriptions.filter(
      q =>
        (q.queue === TASK_QUEUE || q.queue === FAILED_QUEUE) &&
        q.consumers !== CONSUMERS.length,
    );
    if (unsubscribed.length > 0) {
      violations.push({
        invariant: 'each consumer consumes the task and the failed queue again',
        count: unsubscribed.length,
        rows: unsubscribed,
      });
    }
    const stops = await Promise.all(
      processes.map(async p => ({process: p.name, exit: await p.stop()})),
    );
    const unclean = stops.filter(s => !s.exit || s.exit.code !== 0);
    if (unclean.length > 0) {
      violations.push({
        invariant: 'every process was alive at the end and stops cleanly',
        count: unclean.length,
        rows: unclean,
      });
    }
    const effects = readSideEffects(sideEffectFile);
    const windows: FaultWindow[] = faults.map(f => ({
      kind: f.kind,
      from: f.at,
      to: f.to,
    }));
    const ledger = await checkLedger(ledgerDb, {
      firstSlot,
      expectedLastSlot: lastSlot,
      maxRetries: TEST_RETRY.maxRetries,
      sideEffects: effects.byRun,
      faultWindows: windows,
      windowSlackMs: 15_000,
    });
    violations.push(...ledger.violations);
    const report = {
      profile: 'fleet',
      schedulers: SCHEDULERS,
      simulated_minutes: ledger.figures.slots,
      clock_scale: CLOCK_SCALE,
      real_seconds: Math.round((Date.now() - started) / 1000),
      processes: {producers: PRODUCERS.length, consumers: CONSUMERS.length},
      broker:
        '3-node RabbitMQ cluster, quorum queues, AMQP_URL lists every node',
      database:
        'PostgreSQL behind PgBouncer (transaction pooling, 6 server connections)',
      // How the faults reached the processes (a process connected to a
      // surviving node does not reconnect at all).
      felt: Object.fromEntries(
        processes.map(p => [
          p.name,
          {
            broker_connects: p.seenCount.get('Broker connected') ?? 0,
            database_connections_lost:
              p.seenCount.get('Database connection lost') ?? 0,
            ticks_failed: p.seenCount.get('Tick failed') ?? 0,
            // A database error while handling a delivery requeues it.
            deliveries_requeued_on_error:
              p.seenCount.get('Task handling failed; message requeued') ?? 0,
            // Producers: runs whose message the broker lost, sent again.
            runs_sent_again_as_lost:
              p.seenCount.get('Run lost by the broker; sent again') ?? 0,
            // Consumers: late originals of those, refused.
            replaced_messages_refused:
              p.seenCount.get(
                'Message replaced by a copy the lost-run sweep sent; acknowledged without running',
              ) ?? 0,
          },
        ]),
      ),
      faults: faults.map(f => ({
        kind: f.kind,
        target: f.target,
        seconds: ((f.to - f.at) / 1000).toFixed(1),
      })),
      runs: {
        due: ledger.figures.due,
        claimed: ledger.figures.claimed,
        succeeded: ledger.figures.succeeded,
        failed: ledger.figures.failed,
        lost: ledger.figures.lost,
        duplicate_claims: ledger.figures.duplicateClaims,
        redelivered: ledger.figures.redelivered,
        repeated_side_effects_after_a_fault:
          ledger.figures.repeatedSideEffects.explainedByFault,
        repeated_side_effects_unexplained:
          ledger.figures.repeatedSideEffects.unexplained,
      },
      finished_at: new Date().toISOString(),
      machine: {
        cpus: cpus().length,
        node: process.version,
        load_average_at_end: loadavg().map(l => l.toFixed(2)),
      },
    };
    log(`figures:\n${JSON.stringify(report, null, 2)}`);
    if (reportFile) {
      writeFileSync(reportFile, JSON.stringify(report, null, 2) + '\n');
    }
    if (violations.length > 0 || !drained) {
      for (const v of violations) {
        process.stderr.write(
          `\nINVARIANT VIOLATED: ${v.invariant} (${v.count})\n${JSON.stringify(v.rows, null, 2)}\n`,
        );
      }
      process.stderr.write(`\nchaos fleet: FAILED; logs in ${dir}\n`);
      return 1;
    }
    failed = false;
    log(
      `passed: ${report.runs.claimed} runs, 0 lost, 0 duplicate claims, node ${faults[0].target} stopped and rejoined, database restarted`,
    );
    return 0;
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
    await cleanUp();
    // The database lived on the private server, which is gone with it.
    if (!failed) rmSync(dir, {recursive: true, force: true});
  }
}

if (require.main === module) {
  const args = process.argv.slice(2);
  const reportAt = args.indexOf('--report');
  if (args.some((arg, i) => arg !== '--report' && i !== reportAt + 1)) {
    process.stderr.write(
      'usage: npm run test:chaos:fleet -- [--report <file.json>]\n',
    );
    process.exit(2);
  }
  runFleetChaos(reportAt >= 0 ? args[reportAt + 1] : undefined).then(
    code => process.exit(code),
    error => {
      process.stderr.write(`chaos fleet: ${(error as Error).stack}\n`);
      process.exit(1);
    },
  );
}
