/** Per-scheduler notice state, as stored in failure_notice_state. */
export interface NoticeState {
  lastNoticeAt: Date | null;
  /** Failures since the last notice that it did not tell of. */
  unreported: number;
  /** A failure notice went out and no recovery notice since. */
  failing: boolean;
}

export type NoticeDecision =
  {send: 'failure'; alsoFailed: number} | {send: 'none'};

/**
 * Pure: what one more failure at `now` gives. A failure notice goes out when
 * none did within `intervalMs`; it tells how many failed in between
 * (`alsoFailed`). Otherwise the failure is counted for the digest.
 */
export function onFailure(
  state: NoticeState,
  now: Date,
  intervalMs: number,
): {state: NoticeState; decision: NoticeDecision} {
  const due =
    state.lastNoticeAt === null ||
    now.getTime() - state.lastNoticeAt.getTime() >= intervalMs;
  if (!due) {
    return {
      state: {...state, unreported: state.unreported + 1},
      decision: {send: 'none'},
    };
  }
  return {
    state: {lastNoticeAt: now, unreported: 0, failing: true},
    decision: {send: 'failure', alsoFailed: state.unreported},
  };
}

/** Pure: whether a digest of the failures not told of is due at `now`. */
export function digestDue(
  state: NoticeState,
  now: Date,
  intervalMs: number,
): boolean {
  return (
    state.unreported > 0 &&
    state.lastNoticeAt !== null &&
    now.getTime() - state.lastNoticeAt.getTime() >= intervalMs
  );
}

/** The longest last error a notice quotes: readable in a list of notices. */
export const MAX_ERROR_QUOTED = 300;

export function cutError(error: string, max = MAX_ERROR_QUOTED): string {
  return error.length <= max ? error : `${error.slice(0, max - 1)}…`;
}
