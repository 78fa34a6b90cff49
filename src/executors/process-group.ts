import type {ChildProcess} from 'node:child_process';

/**
 * Sends `signal` to the child's whole process group. Children are spawned
 * `detached`, so each leads a group of its own holding everything it started
 * (`sleep 600 &` included); killing only its pid would leave those running
 * with our output pipes open. Falls back to the child alone where the group
 * is gone or cannot be signalled.
 */
export function signalProcessGroup(
  child: ChildProcess,
  signal: NodeJS.Signals,
): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      // Already gone.
    }
  }
}
