import {DestroyRef} from '@angular/core';

export const POLL_INTERVAL_MS = 5000;

/**
 * Calls `refresh` every 5 s while the tab is visible: a hidden tab asks the
 * API nothing, and becoming visible again refreshes at once.
 */
export function pollWhileVisible(
  destroyRef: DestroyRef,
  refresh: () => void,
  everyMs = POLL_INTERVAL_MS,
): void {
  const tick = () => {
    if (!document.hidden) refresh();
  };
  const timer = setInterval(tick, everyMs);
  document.addEventListener('visibilitychange', tick);
  destroyRef.onDestroy(() => {
    clearInterval(timer);
    document.removeEventListener('visibilitychange', tick);
  });
}
