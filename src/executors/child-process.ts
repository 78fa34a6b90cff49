import type {ChildProcess} from 'node:child_process';
import type {Logger} from '../logging/logger';
import {
  DEFAULT_OUTPUT_MAX_BYTES,
  logBoundedLines,
  OutputBudget,
} from './bounded-output';
import {signalProcessGroup} from './process-group';
import {TaskAborted, TaskFailure, TaskTimedOut} from './task-executor';

/**
 * After the child exits, how long its output may still take to arrive. A
 * process it left running can hold the pipes open for ever; past this the
 * streams are destroyed and the run ends with the child's own exit.
 */
export const OUTPUT_DRAIN_MS = 500;

export interface ChildOutcome {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface WatchOptions {
  /** "worker" or "report": names the child in reasons. */
  kind: string;
  logger: Logger;
  timeoutMs: number;
  /** After SIGTERM, how long before SIGKILL. */
  killGraceMs: number;
  signal: AbortSignal;
  /** Output logged per run (stdout and stderr together); the rest is dropped. */
  outputMaxBytes?: number;
  /** Called once when the run's output is cut. */
  onOutputCut?: () => void;
}

/**
 * Watches a spawned or forked child: logs each output line (every log record
 * carries its time), stops it and its process group on timeout or shutdown
 * (SIGTERM, then SIGKILL after a grace) and settles when it has exited and
 * its output is read, or OUTPUT_DRAIN_MS after it exited.
 * A timeout, a signal or an exec failure becomes a TaskFailure; a shutdown a
 * TaskAborted. The exit code is returned for the caller to judge.
 */
export function watchChild(
  child: ChildProcess,
  options: WatchOptions,
): Promise<ChildOutcome> {
  const budget = new OutputBudget(
    options.outputMaxBytes ?? DEFAULT_OUTPUT_MAX_BYTES,
    options.onOutputCut,
  );
  for (const name of ['stdout', 'stderr'] as const) {
    logBoundedLines(child[name], {name, logger: options.logger, budget});
  }
  let stoppedBy: 'timeout' | 'shutdown' | undefined;
  let killTimer: NodeJS.Timeout | undefined;
  const terminate = (reason: 'timeout' | 'shutdown') => {
    if (stoppedBy !== undefined || child.exitCode !== null) return;
    stoppedBy = reason;
    // The whole group: what the child started must not outlive a timeout.
    signalProcessGroup(child, 'SIGTERM');
    killTimer = setTimeout(
      () => signalProcessGroup(child, 'SIGKILL'),
      options.killGraceMs,
    );
  };
  const timeout = setTimeout(() => terminate('timeout'), options.timeoutMs);
  const onAbort = () => terminate('shutdown');
  options.signal.addEventListener('abort', onAbort);
  if (options.signal.aborted) onAbort();

  return new Promise<ChildOutcome>((resolve, reject) => {
    let drainTimer: NodeJS.Timeout | undefined;
    let finished = false;
    const settle = () => {
      clearTimeout(timeout);
      clearTimeout(killTimer);
      clearTimeout(drainTimer);
      options.signal.removeEventListener('abort', onAbort);
    };
    const finish = (code: number | null, signal: NodeJS.Signals | null) => {
      if (finished) return;
      finished = true;
      settle();
      if (stoppedBy === 'shutdown') {
        reject(new TaskAborted(`${options.kind} stopped by shutdown`));
      } else if (stoppedBy === 'timeout') {
        reject(
          new TaskTimedOut(
            `${options.kind} timed out after ${options.timeoutMs} ms (${signal ?? `exit ${code}`})`,
          ),
        );
      } else if (signal) {
        reject(new TaskFailure(`${options.kind} was killed by ${signal}`));
      } else {
        resolve({code, signal});
      }
    };
    child.once('error', error => {
      if (finished) return;
      finished = true;
      settle();
      const code = (error as NodeJS.ErrnoException).code;
      reject(
        new TaskFailure(
          code === 'ENOENT'
            ? `${options.kind} executable not found`
            : code === 'EACCES'
              ? `${options.kind} executable is not executable (EACCES)`
              : `${options.kind} could not start: ${error.message}`,
        ),
      );
    });
    child.once('close', finish);
    // Finish on exit: 'close' waits for the pipes, which a background
    // process the child started may hold open long after it exited. What it
    // left in its group is stopped: a task must not leave processes behind.
    child.once('exit', () => {
      signalProcessGroup(child, 'SIGTERM');
      drainTimer = setTimeout(() => {
        options.logger.warn(
          `${options.kind} exited but its output stayed open (a process it started ignored SIGTERM); output closed`,
        );
        child.stdout?.destroy();
        child.stderr?.destroy();
        finish(child.exitCode, child.signalCode);
      }, OUTPUT_DRAIN_MS);
    });
  });
}
