import type {Candidate} from './candidate';
import type {DueWindow, Evaluation} from './due-evaluator';

/**
 * A tick's reading and evaluation made a few seconds before it: at the
 * boundary, when every due run waits for it, the tick only checks what
 * changed since (`refreshCandidates`) instead of reading every candidate.
 */
export interface ReadAhead {
  slots: Date[];
  window: DueWindow;
  candidates: Candidate[];
  calendarsVersion: string;
  evaluation: Evaluation;
}

/** What a tick made of the read-ahead (the tick's log line says it). */
export type ReadAheadUse =
  /** Nothing changed: the early evaluation was used as it was. */
  | 'reused'
  /** Candidates or calendars changed: read again where needed, evaluated afresh. */
  | 'refreshed'
  /** None was ready (the first tick, a catch-up, a failed read): read in full. */
  | 'none';

/**
 * The early evaluation holds for a tick only when it was made for the same
 * slots and window, from the same candidates and calendars: evaluation is a
 * function of those alone.
 */
export function earlyEvaluationHolds(
  early: ReadAhead,
  now: {slots: Date[]; window: DueWindow; calendarsVersion: string},
  candidatesChanged: boolean,
): boolean {
  return (
    !candidatesChanged &&
    early.calendarsVersion === now.calendarsVersion &&
    sameInstants(early.slots, now.slots) &&
    sameInstants(
      [early.window.current, early.window.oldest],
      [now.window.current, now.window.oldest],
    )
  );
}

function sameInstants(a: Date[], b: Date[]): boolean {
  return (
    a.length === b.length && a.every((d, i) => d.getTime() === b[i].getTime())
  );
}
