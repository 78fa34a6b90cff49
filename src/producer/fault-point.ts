import {unlinkSync} from 'node:fs';

/** Called with the number of runs just claimed, before they are published. */
export type AfterClaimFaultPoint = (claimed: number) => void;

/**
 * Test-only fault point for the chaos suite: when `triggerFile` exists after
 * a claim of at least one run, it is removed (so exactly one crash follows one
 * trigger) and the process is SIGKILLed before publishing. This reproduces the
 * worst moment for a producer to die: runs claimed, nothing published.
 */
export function killAfterClaimFaultPoint(
  triggerFile: string,
  kill: () => void = () => process.kill(process.pid, 'SIGKILL'),
): AfterClaimFaultPoint {
  return claimed => {
    if (claimed === 0) return;
    try {
      unlinkSync(triggerFile);
    } catch {
      return; // no trigger (the usual case)
    }
    kill();
  };
}
