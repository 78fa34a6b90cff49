import {realpathSync} from 'node:fs';
import path from 'node:path';

const FILE_NAME = /^[A-Za-z0-9._-]+$/;

/** Why `command` cannot run from `workersDir`, or undefined when it can. */
export function workerCommandProblem(
  workersDir: string,
  command: string,
): string | undefined {
  if (!FILE_NAME.test(command) || command === '.' || command === '..') {
    return 'must be a file name of letters, digits, ".", "_" or "-", not "." or ".."';
  }
  const resolved = path.resolve(workersDir, command);
  if (path.dirname(resolved) !== path.resolve(workersDir)) {
    return 'must resolve inside WORKERS_DIR';
  }
  try {
    // A symbolic link inside the folder must not lead out of it.
    const real = realpathSync(resolved);
    const realDir = realpathSync(workersDir);
    if (!real.startsWith(realDir + path.sep)) {
      return 'must resolve inside WORKERS_DIR (it is a link that leads out)';
    }
  } catch {
    // Not there yet: the consumer reports a missing executable at run time.
  }
  return undefined;
}

/** The absolute path of a worker's executable; throws if it escapes the folder. */
export function resolveWorkerCommand(
  workersDir: string,
  command: string,
): string {
  const problem = workerCommandProblem(workersDir, command);
  if (problem) throw new Error(`worker command "${command}" ${problem}`);
  return path.resolve(workersDir, command);
}
