/** Progress lines of the chaos suite, with the real time. */
export const log = (message: string) =>
  process.stdout.write(
    `[chaos ${new Date().toISOString().slice(11, 23)}] ${message}\n`,
  );

export const sleep = (ms: number) =>
  new Promise(resolve => setTimeout(resolve, ms));

/** Polls `condition` until true (returns true) or the time is up (false, logged). */
export async function waitFor(
  what: string,
  timeoutMs: number,
  condition: () => Promise<boolean> | boolean,
  pollMs = 250,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await condition()) return true;
    await sleep(pollMs);
  }
  log(`timed out after ${timeoutMs} ms waiting for ${what}`);
  return false;
}
