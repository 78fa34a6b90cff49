/**
 * True for errors that pass: the connection (no SQLSTATE, a Node socket
 * error such as ECONNRESET or EPIPE, class 08), resources (53), operator
 * intervention such as a restart or a statement timeout (57), system
 * errors (58). A data or constraint error, or a bug, would fail again.
 */
export function isTransientDatabaseError(error: unknown): boolean {
  // Our own code's errors (a value it could not handle) fail again.
  if (
    error instanceof TypeError ||
    error instanceof RangeError ||
    error instanceof SyntaxError
  )
    return false;
  const code = (error as {code?: unknown})?.code;
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return true;
  // A Node socket error of five letters (EPIPE) is no SQLSTATE: no class starts with E.
  if (/^E[A-Z]{4}$/.test(code)) return true;
  return /^(08|53|57|58)/.test(code);
}
