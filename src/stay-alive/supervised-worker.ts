import type {ChildProcess} from 'node:child_process';
import {
  DEFAULT_OUTPUT_MAX_BYTES,
  logBoundedLines,
  OutputBudget,
} from '../executors/bounded-output';
import {signalProcessGroup} from '../executors/process-group';
import {spawnTiedToParent} from '../executors/tied-spawn';
import type {Logger} from '../logging/logger';
import {RestartBackoff, BackoffSettings} from './restart-backoff';
import type {Metrics} from '../metrics/metrics';
import type {Timers} from './timers';

export interface WorkerLaunch {
  schedulerId: number;
  /** Absolute path inside WORKERS_DIR. */
  executable: string;
  args: string[];
  env: Record<string, string>;
}

export interface SupervisedWorkerOptions {
  backoff: BackoffSettings;
  stopGraceMs: number;
  timers: Timers;
  logger: Logger;
  /** Output logged per start of the worker; the rest is dropped. */
  outputMaxBytes?: number;
  metrics?: Metrics;
}

/**
 * Keeps one stay-alive worker running: spawns it without a shell, logs its
 * output, and when it exits (whatever the code: it is meant to run for
 * ever) starts it again after a capped exponential delay. `stop()` ends it:
 * SIGTERM, then SIGKILL after the grace.
 */
export class SupervisedWorker {
  private child?: ChildProcess;
  private startedAt = 0;
  private restartTimer?: unknown;
  private stopping?: Promise<void>;
  private exited?: Promise<void>;
  private readonly backoff: RestartBackoff;
  private readonly logger: Logger;
  starts = 0;

  constructor(
    readonly launch: WorkerLaunch,
    private readonly options: SupervisedWorkerOptions,
  ) {
    this.backoff = new RestartBackoff(options.backoff);
    this.logger = options.logger.child({scheduler_id: launch.schedulerId});
  }

  /** The child's pid while it runs. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  start(): void {
    if (this.stopping !== undefined || this.child) return;
    const {executable, args, env} = this.launch;
    // Dies with the supervisor, even on kill -9 (see tied-spawn).
    const child = spawnTiedToParent(executable, args, {
      shell: false,
      // A process group of its own: stopping it stops what it started.
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env,
    });
    this.child = child;
    this.starts++;
    this.startedAt = this.options.timers.now();
    this.logOutput(child);
    let settled = false;
    this.exited = new Promise(resolve => {
      const onEnd = (
        code: number | null,
        signal: NodeJS.Signals | null,
        error?: Error,
      ) => {
        if (settled) return;
        settled = true;
        if (child.pid !== undefined) {
          this.options.metrics?.count('stayAliveWorkers', {}, -1);
        }
        this.child = undefined;
        this.onExit(code, signal, error);
        resolve();
      };
      child.once('exit', (code, signal) => onEnd(code, signal));
      // A spawn failure (missing or non-executable file) emits no 'exit'.
      child.once('error', error => {
        if (child.pid === undefined) onEnd(null, null, error);
        else
          this.logger.warn('Stay-alive worker error', {error: error.message});
      });
    });
    if (child.pid !== undefined) {
      this.options.metrics?.count('stayAliveWorkers');
      this.logger.info('Stay-alive worker started', {
        child_pid: child.pid,
        command: executable,
        start: this.starts,
      });
    }
  }

  private logOutput(child: ChildProcess): void {
    const budget = new OutputBudget(
      this.options.outputMaxBytes ?? DEFAULT_OUTPUT_MAX_BYTES,
      () =>
        this.logger.warn('Stay-alive worker output cut', {
          max_bytes: budget.maxBytes,
        }),
    );
    for (const name of ['stdout', 'stderr'] as const) {
      const msg = 'Stay-alive worker output';
      logBoundedLines(child[name], {name, logger: this.logger, budget, msg});
    }
  }

  /** Idempotent: no more restarts; the running child is stopped. */
  stop(): Promise<void> {
    this.stopping ??= this.shutDown();
    return this.stopping;
  }

  private async shutDown(): Promise<void> {
    this.options.timers.clearTimeout(this.restartTimer);
    const child = this.child;
    if (!child) return;
    signalProcessGroup(child, 'SIGTERM');
    const killTimer = setTimeout(
      () => signalProcessGroup(child, 'SIGKILL'),
      this.options.stopGraceMs,
    );
    await this.exited;
    clearTimeout(killTimer);
  }

  private onExit(
    code: number | null,
    signal: NodeJS.Signals | null,
    error?: Error,
  ): void {
    const ranMs = this.options.timers.now() - this.startedAt;
    if (this.stopping) {
      this.logger.info('Stay-alive worker stopped', {
        code,
        signal,
        ran_ms: ranMs,
      });
      return;
    }
    const delay = this.backoff.nextDelay(ranMs);
    this.logger.warn(
      error ? 'Stay-alive worker could not start' : 'Stay-alive worker exited',
      {
        code,
        signal,
        ran_ms: ranMs,
        ...(error ? {error: error.message} : {}),
      },
    );
    this.logger.info('Stay-alive worker restart scheduled', {
      delay_ms: delay,
      consecutive_crashes: this.backoff.consecutiveCrashes,
    });
    this.restartTimer = this.options.timers.setTimeout(() => {
      this.restartTimer = undefined;
      if (this.stopping) return;
      this.logger.info('Stay-alive worker restarting', {delay_ms: delay});
      this.options.metrics?.count('stayAliveRestarts');
      this.start();
    }, delay);
  }
}
