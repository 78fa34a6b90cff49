import type {Pool} from 'pg';
import {watchChild} from './child-process';
import {outputCutHandler} from './output-cut-note';
import {spawnTiedToParent} from './tied-spawn';
import {
  beforeTaskStarts,
  TaskContext,
  TaskExecutor,
  TaskFailure,
} from './task-executor';
import {MAX_TASK_TIMEOUT_MS} from '../queue/consumer-timeout';
import {resolveWorkerCommand} from './worker-command';

export interface WorkerExecutorOptions {
  workersDir: string;
  defaultTimeoutMs: number;
  killGraceMs: number;
  /** The environment workers get: no secrets of the service. */
  env: Record<string, string>;
  /** TASK_OUTPUT_MAX_BYTES: output logged per run. */
  outputMaxBytes: number;
}

/** `key=value` per params entry (strings as they are, others as JSON), then `scheduler_id=<id>`. */
export function workerArguments(
  params: Record<string, unknown>,
  schedulerId: number,
): string[] {
  return [
    ...Object.entries(params).map(
      ([key, value]) =>
        `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`,
    ),
    `scheduler_id=${schedulerId}`,
  ];
}

/**
 * Which run this is, for workers that must be idempotent under at-least-once
 * delivery (a redelivered run carries the same scheduler id and key).
 */
export function workerRunEnv(context: TaskContext): Record<string, string> {
  return {
    TASK_SCHEDULER_ID: String(context.message.scheduler_id),
    ...(context.executionKey ? {TASK_EXECUTION_KEY: context.executionKey} : {}),
    TASK_ATTEMPT: String(context.attempt),
  };
}

/**
 * Starts `WORKERS_DIR/<worker.command>` without a shell, so nothing in the
 * params is ever interpreted: each argument reaches the program literally.
 */
export class WorkerExecutor implements TaskExecutor {
  constructor(
    private readonly pool: Pool,
    private readonly options: WorkerExecutorOptions,
  ) {}

  async execute(context: TaskContext): Promise<void> {
    const {rows} = await beforeTaskStarts(`worker ${context.message.id}`, () =>
      this.pool.query<{
        command: string;
        timeout_ms: number | null;
      }>('SELECT command, timeout_ms FROM worker WHERE id = $1', [
        context.message.id,
      ]),
    );
    if (rows.length === 0) {
      throw new TaskFailure(`worker ${context.message.id} does not exist`);
    }
    let executable: string;
    try {
      executable = resolveWorkerCommand(
        this.options.workersDir,
        rows[0].command,
      );
    } catch (error) {
      throw new TaskFailure((error as Error).message);
    }
    // A row stored before the cap existed still stops before the broker's consumer timeout.
    const timeoutMs = Math.min(
      rows[0].timeout_ms ?? this.options.defaultTimeoutMs,
      MAX_TASK_TIMEOUT_MS,
    );
    const child = spawnTiedToParent(
      executable,
      workerArguments(context.params, context.message.scheduler_id),
      {
        shell: false,
        // A process group of its own, killed whole on timeout and shutdown.
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: {...this.options.env, ...workerRunEnv(context)},
      },
    );
    const {code} = await watchChild(child, {
      kind: 'worker',
      logger: context.logger,
      timeoutMs,
      killGraceMs: this.options.killGraceMs,
      signal: context.signal,
      outputMaxBytes: this.options.outputMaxBytes,
      onOutputCut: outputCutHandler(
        this.pool,
        context,
        this.options.outputMaxBytes,
      ),
    });
    if (code !== 0) throw new TaskFailure(`worker exited with code ${code}`);
  }
}
