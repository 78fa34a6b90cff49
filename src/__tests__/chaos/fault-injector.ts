import {existsSync, writeFileSync} from 'node:fs';
import type {FaultKind, PlannedFault} from './chaos-plan';
import type {ProcessLinks, SupervisedProcess} from './supervised-process';
import {log, sleep, waitFor} from './wait';

function linksOf(p: SupervisedProcess): ProcessLinks {
  if (!p.links) throw new Error(`${p.name} runs without proxies`);
  return p.links;
}

/** A fault as it happened (real times, ms). */
export interface InjectedFault {
  kind: FaultKind;
  target: string;
  at: number;
  to: number;
  /** Consumer kills: the consumer was inside a task when killed. */
  midTask?: boolean;
}

/**
 * Carries out planned faults on the running processes and records what
 * happened. The kill between claim and publish is armed by creating the
 * trigger file; it counts once a producer has died of it.
 */
export class FaultInjector {
  readonly injected: InjectedFault[] = [];
  private pendingTriggers = 0;

  constructor(
    /** The cluster's processes (the array may still be filling). */
    private readonly processes: SupervisedProcess[],
    private readonly triggerFile: string,
    /** Real ms a consumer kill waits for its target to be inside a task. */
    private readonly midTaskWaitMs: number,
    /** Makes the broker close every consumer channel; resolves with how many. */
    private readonly closeConsumerChannels: () => Promise<number> = () =>
      Promise.resolve(0),
  ) {}

  get armedTriggers(): number {
    return this.pendingTriggers;
  }

  /**
   * For the supervisor: a producer died of SIGKILL that the suite did not
   * send. If a trigger was armed and is gone, the fault point fired.
   */
  readonly claimFaultFired = (): boolean => {
    if (this.pendingTriggers === 0 || existsSync(this.triggerFile)) {
      return false;
    }
    this.pendingTriggers--;
    const now = Date.now();
    this.injected.push({
      kind: 'producer-kill-after-claim',
      target: 'next claiming producer',
      at: now,
      to: now,
    });
    return true;
  };

  async run(fault: PlannedFault): Promise<void> {
    const at = Date.now();
    switch (fault.kind) {
      case 'producer-kill':
        this.process(fault.target).kill();
        this.injected.push({...fault, at, to: at});
        break;
      case 'producer-kill-after-claim':
        this.pendingTriggers++;
        writeFileSync(this.triggerFile, '');
        break;
      case 'channel-close': {
        const closed = await this.closeConsumerChannels();
        log(`the broker closed ${closed} consumer channels (406)`);
        this.injected.push({
          ...fault,
          target: `${closed} channels`,
          at,
          to: at,
        });
        break;
      }
      case 'outcome-mark-cut': {
        // The task ends while the database is away: its outcome mark must be retried, not its task.
        const {victim, midTask} = await this.consumerInsideTask(fault.target);
        linksOf(victim).database.cut();
        const cutAt = Date.now();
        await sleep(fault.durationMs!);
        linksOf(victim).database.restore();
        this.injected.push({
          ...fault,
          target: victim.name,
          at: cutAt,
          to: Date.now(),
          midTask,
        });
        break;
      }
      case 'consumer-kill': {
        const {victim, midTask} = await this.consumerInsideTask(fault.target);
        victim.kill();
        const now = Date.now();
        this.injected.push({
          ...fault,
          target: victim.name,
          at: now,
          to: now,
          midTask,
        });
        break;
      }
      default:
        await this.breakLink(fault, at);
    }
    log(
      `fault ${fault.kind} on ${fault.target}${fault.durationMs ? ` for ${fault.durationMs} ms` : ''}`,
    );
  }

  /**
   * The planned consumer, or after half the wait any consumer inside a task
   * (the planned one may be cut off and idle).
   */
  private async consumerInsideTask(
    target: string,
  ): Promise<{victim: SupervisedProcess; midTask: boolean}> {
    const planned = this.process(target);
    const consumers = this.processes.filter(p => p.name.startsWith('consumer'));
    const started = Date.now();
    let victim = planned;
    const midTask = await waitFor(
      'a consumer to be inside a task',
      this.midTaskWaitMs,
      () => {
        const candidates =
          Date.now() - started < this.midTaskWaitMs / 2
            ? [planned]
            : [planned, ...consumers];
        const busy = candidates.find(p => p.insideTask());
        if (busy) victim = busy;
        return busy !== undefined;
      },
      2,
    );
    return {victim, midTask};
  }

  private async breakLink(fault: PlannedFault, at: number): Promise<void> {
    const link = fault.kind.startsWith('broker') ? 'broker' : 'database';
    const stall = fault.kind.endsWith('stall');
    const targets =
      fault.target === 'all' ? this.processes : [this.process(fault.target)];
    for (const p of targets) {
      if (stall) linksOf(p)[link].stall();
      else linksOf(p)[link].cut();
    }
    await sleep(fault.durationMs!);
    for (const p of targets) linksOf(p)[link].restore();
    this.injected.push({...fault, at, to: Date.now()});
  }

  private process(name: string): SupervisedProcess {
    const found = this.processes.find(p => p.name === name);
    if (!found) throw new Error(`no process named ${name}`);
    return found;
  }
}
