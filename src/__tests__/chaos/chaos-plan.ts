import type {ChaosProfile} from './chaos-profile';
import {SeededRandom} from './seeded-random';

export type FaultKind =
  | 'producer-kill'
  | 'producer-kill-after-claim'
  | 'consumer-kill'
  | 'broker-cut'
  | 'database-cut'
  | 'broker-stall'
  | 'database-stall'
  /** A consumer's database link cut while it is inside a task, so the task's outcome mark fails. */
  | 'outcome-mark-cut'
  /** The broker closes every consumer channel (406), the connections stay up. */
  | 'channel-close';

export interface PlannedFault {
  kind: FaultKind;
  /** Real ms after the start of the fault phase. */
  atMs: number;
  /** A process name, or `all` for a link fault on every process. */
  target: string;
  /** Cuts and stalls: how long the link stays broken. */
  durationMs?: number;
}

export const PRODUCERS = ['producer-1', 'producer-2', 'producer-3'];
export const CONSUMERS = ['consumer-1', 'consumer-2'];

/**
 * The fault schedule, from the seed alone: kinds, moments (in the middle
 * 10%-75% of the run, so there is load before and after), targets and
 * durations. A link fault hits one process or, one time in three, all.
 * The after-claim kill has no target: the next producer to claim dies.
 */
export function planFaults(
  profile: ChaosProfile,
  phaseMs: number,
  random: SeededRandom,
): PlannedFault[] {
  const {faults, cutMs} = profile;
  const kinds: FaultKind[] = [
    ...Array<FaultKind>(faults.producerKills).fill('producer-kill'),
    ...Array<FaultKind>(faults.producerKillsAfterClaim).fill(
      'producer-kill-after-claim',
    ),
    ...Array<FaultKind>(faults.consumerKills).fill('consumer-kill'),
    ...Array<FaultKind>(faults.brokerCuts).fill('broker-cut'),
    ...Array<FaultKind>(faults.databaseCuts).fill('database-cut'),
    ...Array<FaultKind>(faults.outcomeMarkCuts).fill('outcome-mark-cut'),
    ...Array<FaultKind>(faults.channelCloses).fill('channel-close'),
  ];
  for (let i = 0; i < faults.stalls; i++) {
    kinds.push(random.pick(['broker-stall', 'database-stall'] as const));
  }
  random.shuffle(kinds);
  const from = phaseMs * 0.1;
  const span = phaseMs * 0.65;
  const processes = [...PRODUCERS, ...CONSUMERS];
  return kinds
    .map((kind, index): PlannedFault => {
      // One fault per equal share of the window, at a random point in it.
      const atMs = Math.round(
        from + (span * (index + random.next())) / kinds.length,
      );
      switch (kind) {
        case 'producer-kill':
          return {kind, atMs, target: random.pick(PRODUCERS)};
        case 'producer-kill-after-claim':
          return {kind, atMs, target: 'next claiming producer'};
        case 'consumer-kill':
          return {kind, atMs, target: random.pick(CONSUMERS)};
        case 'channel-close':
          return {kind, atMs, target: 'consumer channels'};
        case 'outcome-mark-cut':
          return {
            kind,
            atMs,
            target: random.pick(CONSUMERS),
            durationMs: random.int(cutMs.min, cutMs.max),
          };
        default:
          return {
            kind,
            atMs,
            target: random.int(0, 2) === 0 ? 'all' : random.pick(processes),
            durationMs: random.int(cutMs.min, cutMs.max),
          };
      }
    })
    .sort((a, b) => a.atMs - b.atMs);
}
