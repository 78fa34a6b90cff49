import type {Pool} from 'pg';
import type {Metrics} from '../metrics/metrics';
import type {StayAliveConfig} from '../config';
import {workerArguments} from '../executors/worker.executor';
import {workerParamKeyProblems} from '../executors/worker-params';
import {workerCommandProblem} from '../executors/worker-command';
import type {Logger} from '../logging/logger';
import {SchedulerLocks} from './scheduler-locks';
import {
  loadStayAliveSchedulers,
  StayAliveScheduler,
} from './stay-alive-schedulers';
import {SupervisedWorker, WorkerLaunch} from './supervised-worker';
import {REAL_TIMERS, Timers} from './timers';
import path from 'node:path';

export interface SupervisorOptions {
  pool: Pool;
  databaseUrl: string;
  settings: StayAliveConfig;
  workersDir: string;
  /** The environment workers get: no secrets of the service. */
  env: Record<string, string>;
  logger: Logger;
  timers?: Timers;
  /** Names this supervisor's lock session in pg_stat_activity. */
  name?: string;
  metrics?: Metrics;
}

/** Same program and same arguments: a change of either restarts the worker. */
function sameLaunch(a: WorkerLaunch, b: WorkerLaunch): boolean {
  return (
    a.executable === b.executable &&
    a.args.length === b.args.length &&
    a.args.every((arg, i) => arg === b.args[i])
  );
}

/**
 * The stay-alive role. Every `reconcileMs` it compares the workers it runs
 * with the active stay-alive schedulers: starts new ones (if it wins the
 * scheduler's advisory lock), stops disabled, deleted or changed ones, and
 * keeps each running child alive with restarts in between.
 */
export class StayAliveSupervisor {
  private readonly workers = new Map<number, SupervisedWorker>();
  private readonly locks: SchedulerLocks;
  private readonly timers: Timers;
  private readonly warnedCommands = new Set<string>();
  private timer?: unknown;
  private running?: Promise<void>;
  private stopped = true;
  private stopping?: Promise<void>;
  /** When the last reconciliation finished without error (timers.now()). */
  lastReconciledAt?: number;

  constructor(private readonly options: SupervisorOptions) {
    this.timers = options.timers ?? REAL_TIMERS;
    this.locks = new SchedulerLocks(
      options.databaseUrl,
      options.logger,
      () => this.stopAllWorkers('lock connection lost'),
      `stay-alive ${options.name ?? process.pid}`,
    );
  }

  /** The supervisor's clock, in ms: readiness compares against it. */
  now(): number {
    return this.timers.now();
  }

  /** Scheduler ids whose worker this supervisor runs now. */
  runningSchedulerIds(): number[] {
    return [...this.workers.keys()].sort((a, b) => a - b);
  }

  worker(schedulerId: number): SupervisedWorker | undefined {
    return this.workers.get(schedulerId);
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.stopping = undefined;
    this.loop();
  }

  /** Idempotent: no more reconciliations; every child stopped, locks released. */
  stop(): Promise<void> {
    this.stopping ??= this.shutDown();
    return this.stopping;
  }

  /** One comparison of running workers with the database; errors are thrown. */
  async reconcile(): Promise<void> {
    await this.locks.connect();
    await this.locks.verify();
    const wanted = new Map<number, WorkerLaunch>();
    for (const scheduler of await loadStayAliveSchedulers(this.options.pool)) {
      const launch = this.launchFor(scheduler);
      if (launch) wanted.set(scheduler.id, launch);
    }
    const stops: Array<Promise<void>> = [];
    for (const [id, worker] of this.workers) {
      const launch = wanted.get(id);
      if (launch && sameLaunch(launch, worker.launch)) continue;
      stops.push(
        this.stopWorker(
          id,
          launch ? 'scheduler changed' : 'scheduler inactive',
        ),
      );
    }
    await Promise.all(stops);
    for (const [id, launch] of wanted) {
      if (this.stopping !== undefined || this.workers.has(id)) continue;
      if (!(await this.locks.tryLock(id))) continue;
      const worker = new SupervisedWorker(launch, {
        backoff: {
          baseMs: this.options.settings.restartDelayMs,
          maxMs: this.options.settings.restartMaxDelayMs,
          stableMs: this.options.settings.stableMs,
        },
        stopGraceMs: this.options.settings.stopGraceMs,
        outputMaxBytes: this.options.settings.outputMaxBytes,
        timers: this.timers,
        logger: this.options.logger,
        metrics: this.options.metrics,
      });
      this.workers.set(id, worker);
      worker.start();
    }
    this.lastReconciledAt = this.timers.now();
  }

  private launchFor(scheduler: StayAliveScheduler): WorkerLaunch | undefined {
    const problem =
      workerCommandProblem(this.options.workersDir, scheduler.command) ??
      workerParamKeyProblems(scheduler.params)[0];
    if (problem) {
      const key = `${scheduler.id}:${scheduler.command}`;
      if (!this.warnedCommands.has(key)) {
        this.warnedCommands.add(key);
        this.options.logger.error('Stay-alive worker command rejected', {
          scheduler_id: scheduler.id,
          worker_id: scheduler.workerId,
          problem,
        });
      }
      return undefined;
    }
    return {
      schedulerId: scheduler.id,
      executable: path.resolve(this.options.workersDir, scheduler.command),
      args: workerArguments(scheduler.params, scheduler.id),
      env: this.options.env,
    };
  }

  private async stopWorker(id: number, reason: string): Promise<void> {
    const worker = this.workers.get(id);
    if (!worker) return;
    this.options.logger.info('Stopping stay-alive worker', {
      scheduler_id: id,
      reason,
    });
    await worker.stop();
    this.workers.delete(id);
    await this.locks.unlock(id).catch(() => undefined);
  }

  /** Without the locks we own nothing: stop at once so another supervisor may run them. */
  private stopAllWorkers(reason: string): void {
    for (const id of [...this.workers.keys()]) {
      this.stopWorker(id, reason).catch(() => undefined);
    }
  }

  private loop(): void {
    this.running = this.reconcile()
      .catch(error =>
        this.options.logger.error('Stay-alive reconciliation failed', {
          error: (error as Error).message,
        }),
      )
      .then(() => {
        this.running = undefined;
        if (this.stopped) return;
        this.timer = this.timers.setTimeout(
          () => this.loop(),
          this.options.settings.reconcileMs,
        );
      });
  }

  private async shutDown(): Promise<void> {
    this.stopped = true;
    this.timers.clearTimeout(this.timer);
    await this.running;
    await Promise.all(
      [...this.workers.keys()].map(id => this.stopWorker(id, 'shutdown')),
    );
    await this.locks.close();
  }
}
