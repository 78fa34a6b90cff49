import {readFileSync} from 'node:fs';
import type {SupervisedProcess} from './supervised-process';

/** How often the consumers' resident memory is read. */
const SAMPLE_MS = 200;

/** A process's resident memory now, in MiB, or undefined when it is gone. */
export function residentMb(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const match = /^VmRSS:\s+(\d+) kB/m.exec(status);
    return match ? Math.round(Number(match[1]) / 1024) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The highest resident memory any watched process reached, sampled while the
 * run goes on: a killed process's own high-water mark dies with it, so the
 * peak is kept here across restarts.
 */
export class PeakRss {
  peakMb = 0;
  private timer?: NodeJS.Timeout;

  watch(processes: () => SupervisedProcess[]): void {
    this.stop();
    this.timer = setInterval(() => {
      for (const proc of processes()) {
        const mb = residentMb(proc.child?.pid);
        if (mb !== undefined && mb > this.peakMb) this.peakMb = mb;
      }
    }, SAMPLE_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
