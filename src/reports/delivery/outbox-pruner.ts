import {readdir, rm, stat} from 'node:fs/promises';
import path from 'node:path';

export interface OutboxLimits {
  maxAgeMs: number;
  maxBytes: number;
}

/**
 * Deletes outbox .eml files older than `maxAgeMs`, then the oldest ones
 * until the rest fit in `maxBytes`. Returns how many it deleted.
 */
export async function pruneOutbox(
  dir: string,
  limits: OutboxLimits,
  now: number = Date.now(),
): Promise<number> {
  const names = (await readdir(dir)).filter(name => name.endsWith('.eml'));
  const files = await Promise.all(
    names.map(async name => {
      const file = path.join(dir, name);
      const {size, mtimeMs} = await stat(file);
      return {file, size, mtimeMs};
    }),
  );
  files.sort((a, b) => b.mtimeMs - a.mtimeMs);
  let kept = 0;
  const doomed = files.filter(({size, mtimeMs}) => {
    if (now - mtimeMs > limits.maxAgeMs || kept + size > limits.maxBytes) {
      return true;
    }
    kept += size;
    return false;
  });
  await Promise.all(doomed.map(({file}) => rm(file, {force: true})));
  return doomed.length;
}
