import {ChildProcess, spawn, SpawnOptions} from 'node:child_process';
import {accessSync, constants, existsSync} from 'node:fs';
import {groupGuard} from './group-guard';

/** util-linux's setpriv: on every Debian system (and in our image). */
const SETPRIV = '/usr/bin/setpriv';
let setprivAvailable: boolean | undefined;

/**
 * Spawns `executable` so that the kernel SIGKILLs it when this process dies
 * (PR_SET_PDEATHSIG, set by setpriv, which then execs the executable: same
 * pid, same arguments, still no shell). Without it, a consumer killed with
 * `kill -9` left its running worker behind as an orphan, finishing next to
 * the copy the redelivery starts. Where setpriv is missing (not Linux), the
 * executable is spawned directly and only a process-group kill reaches it.
 * What the child starts in its group is killed by the group guard.
 */
export function spawnTiedToParent(
  executable: string,
  args: readonly string[],
  options: SpawnOptions,
): ChildProcess {
  setprivAvailable ??= existsSync(SETPRIV);
  if (options.detached) groupGuard.prepare();
  const child =
    !setprivAvailable || !isExecutable(executable)
      ? // A missing or non-executable file fails here as before (ENOENT,
        // EACCES), not as setpriv's exit code.
        spawn(executable, [...args], options)
      : spawn(
          SETPRIV,
          ['--pdeathsig', 'KILL', '--', executable, ...args],
          options,
        );
  guardGroup(child, options);
  return child;
}

/**
 * A detached child leads a process group holding all it starts: guarded
 * (group-guard.ts) until its pipes closed, so what it started dies with
 * this process too, not only the child (pdeathsig reaches the child alone).
 */
function guardGroup(child: ChildProcess, options: SpawnOptions): void {
  const pgid = child.pid;
  if (!options.detached || pgid === undefined) return;
  groupGuard.guard(pgid);
  child.once('close', () => groupGuard.release(pgid));
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
