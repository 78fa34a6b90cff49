/**
 * Starts work that shows its own errors (every view's load catches and
 * displays them), so a rejection left over has nowhere better to go.
 */
export function inBackground(work: Promise<unknown>): void {
  work.catch(() => undefined);
}
