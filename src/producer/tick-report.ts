import type {ReadAheadUse} from './read-ahead';

/** What one tick did: the producer's "Tick completed" log line and its metrics. */
export interface TickReport {
  slots: number;
  due: number;
  claimed: number;
  already_claimed: number;
  /** Runs of overlap_policy skip schedulers recorded skipped: an earlier run was still going. */
  skipped_overlap: number;
  /** Runs a calendar skipped (blackout matched, or no allowed calendar did). */
  skipped_calendar: number;
  /** Schedulers switched off because their active window ended. */
  window_ended: number;
  /**
   * Runs claimed for the minute before the tick's slots: their scheduler's
   * activation, just before that minute, committed after its tick had read.
   */
  late_activated: number;
  published: number;
  /** Schedulers skipped because their schedule, zone or date is unreadable. */
  invalid: number;
  /** One-time schedulers switched off: their moment is older than the catch-up window. */
  missed_one_time: number;
  /** Slots a peer producer held the lease of and evaluated. */
  slots_by_peers: number;
  /** Slots whose peer's lease expired unfinished, evaluated here instead. */
  slots_taken_over: number;
  /** What the tick made of the reading done ahead of it. */
  read_ahead: ReadAheadUse;
  swept: number;
  /** Unpublished claims older than the catch-up window, marked skipped. */
  skipped_stale: number;
  duration_ms: number;
}

export type EvaluationCounts = Omit<
  TickReport,
  | 'swept'
  | 'skipped_stale'
  | 'duration_ms'
  | 'slots_by_peers'
  | 'slots_taken_over'
  | 'window_ended'
  | 'read_ahead'
>;

export const NOTHING_EVALUATED: EvaluationCounts = {
  slots: 0,
  due: 0,
  claimed: 0,
  already_claimed: 0,
  skipped_overlap: 0,
  skipped_calendar: 0,
  late_activated: 0,
  published: 0,
  invalid: 0,
  missed_one_time: 0,
};

export function sumCounts(
  a: EvaluationCounts,
  b: EvaluationCounts,
): EvaluationCounts {
  const total = {...a};
  for (const key of Object.keys(b) as Array<keyof EvaluationCounts>) {
    total[key] += b[key];
  }
  return total;
}
