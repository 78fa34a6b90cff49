import {readdir, readFile} from 'node:fs/promises';
import path from 'node:path';

/** How a folder differs from the expected one; paths are relative and sorted. */
export interface DirectoryDiff {
  /** In both, with different content. */
  modified: string[];
  /** Expected but absent. */
  missing: string[];
  /** Present but not expected. */
  stale: string[];
}

/** Every file below `dir`, relative to it; none when `dir` does not exist. */
export async function listFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, {withFileTypes: true}).catch(
    (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return [];
      throw error;
    },
  );
  const files: string[] = [];
  for (const entry of entries) {
    if (entry.isDirectory()) {
      const nested = await listFiles(path.join(dir, entry.name));
      files.push(...nested.map(file => path.join(entry.name, file)));
    } else {
      files.push(entry.name);
    }
  }
  return files.sort();
}

export async function diffDirectories(
  expectedDir: string,
  actualDir: string,
): Promise<DirectoryDiff> {
  const expected = await listFiles(expectedDir);
  const actual = new Set(await listFiles(actualDir));
  const diff: DirectoryDiff = {modified: [], missing: [], stale: []};
  for (const file of expected) {
    if (!actual.delete(file)) {
      diff.missing.push(file);
      continue;
    }
    const [want, have] = await Promise.all([
      readFile(path.join(expectedDir, file)),
      readFile(path.join(actualDir, file)),
    ]);
    if (!want.equals(have)) diff.modified.push(file);
  }
  diff.stale.push(...actual);
  return diff;
}

export function isSame(diff: DirectoryDiff): boolean {
  return !diff.modified.length && !diff.missing.length && !diff.stale.length;
}
