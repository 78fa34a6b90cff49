import {fork} from 'node:child_process';
import path from 'node:path';
import type {Pool} from 'pg';
import type {ReportRequest} from '../reports/report';
import {watchChild} from './child-process';
import {outputCutHandler} from './output-cut-note';
import {
  beforeTaskStarts,
  TaskContext,
  TaskExecutor,
  TaskFailure,
} from './task-executor';

export const REPORT_CHILD = path.resolve(
  __dirname,
  '../reports/report-child.js',
);

interface ChildMessage {
  type: 'completed' | 'failed';
  summary?: Record<string, unknown>;
  error?: {name: string; message: string; stack?: string};
}

export interface ReportExecutorOptions {
  defaultTimeoutMs: number;
  killGraceMs: number;
  env: Record<string, string>;
  /** TASK_OUTPUT_MAX_BYTES: output logged per run. */
  outputMaxBytes: number;
}

/**
 * Forces instant delivery so errors come back to us (the spec's rule), and
 * returns the request the report child receives.
 */
export function reportRequestFor(
  controller: string,
  params: Record<string, unknown>,
  schedulerId: number,
): ReportRequest {
  const options = {...((params.options_interface as object) ?? {})} as Record<
    string,
    unknown
  >;
  if (options.delivery && typeof options.delivery === 'object') {
    options.delivery = {...(options.delivery as object), instant: true};
  }
  return {
    ...params,
    controller,
    options_interface: options,
    report_params: (params.report_params as Record<string, unknown>) ?? {},
    scheduler_id: schedulerId,
  };
}

/** Runs the report in a forked child; exit code and IPC message decide. */
export class ReportExecutor implements TaskExecutor {
  constructor(
    private readonly pool: Pool,
    private readonly options: ReportExecutorOptions,
  ) {}

  async execute(context: TaskContext): Promise<void> {
    const {rows} = await beforeTaskStarts(`report ${context.message.id}`, () =>
      this.pool.query<{controller: string}>(
        'SELECT controller FROM report WHERE id = $1',
        [context.message.id],
      ),
    );
    if (rows.length === 0) {
      throw new TaskFailure(`report ${context.message.id} does not exist`);
    }
    const request = reportRequestFor(
      rows[0].controller,
      context.params,
      context.message.scheduler_id,
    );
    const child = fork(REPORT_CHILD, [], {
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      // A process group of its own, killed whole on timeout and shutdown.
      detached: true,
      env: this.options.env,
      execArgv: [],
    });
    let answer: ChildMessage | undefined;
    child.on('message', (message: ChildMessage) => (answer = message));
    const outcome = watchChild(child, {
      kind: 'report',
      logger: context.logger,
      timeoutMs: this.options.defaultTimeoutMs,
      killGraceMs: this.options.killGraceMs,
      signal: context.signal,
      outputMaxBytes: this.options.outputMaxBytes,
      onOutputCut: outputCutHandler(
        this.pool,
        context,
        this.options.outputMaxBytes,
      ),
    });
    child.send({type: 'run', request});
    const {code} = await outcome;
    if (code === 0 && answer?.type === 'completed') {
      context.logger.info('Report completed', {summary: answer.summary});
      return;
    }
    if (answer?.type === 'failed' && answer.error) {
      context.logger.error('Report failed', {
        error: answer.error.message,
        error_name: answer.error.name,
        stack: answer.error.stack,
      });
      throw new TaskFailure(`report failed: ${answer.error.message}`);
    }
    throw new TaskFailure(`report exited with code ${code} without a result`);
  }
}
