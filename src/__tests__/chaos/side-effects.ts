import {readFileSync} from 'node:fs';

/** One line the chaos worker appended: one attempt of one run. */
export interface SideEffect {
  schedulerId: number;
  executionKey: string;
  attempt: number;
  outcome: 'ok' | 'fail';
  /** Real time in ms. */
  at: number;
  consumerPid: number;
}

/** Attempts per run, keyed `<scheduler_id> <execution_key>`. */
export type SideEffectsByRun = Map<string, SideEffect[]>;

export const runKey = (schedulerId: number, executionKey: string) =>
  `${schedulerId} ${executionKey}`;

/** Reads the worker's file; a malformed line is itself a finding. */
export function readSideEffects(file: string): {
  byRun: SideEffectsByRun;
  malformed: string[];
  total: number;
} {
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    // No worker ever ran: every run will show up as missing its side effect.
  }
  const byRun: SideEffectsByRun = new Map();
  const malformed: string[] = [];
  let total = 0;
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const match =
      /^(\d+) (cron-[\d-]+) (\d+) (ok|fail) (\d+(?:[.,]\d+)?) (\d+)$/.exec(
        line,
      );
    if (!match) {
      malformed.push(line);
      continue;
    }
    total++;
    const effect: SideEffect = {
      schedulerId: Number(match[1]),
      executionKey: match[2],
      attempt: Number(match[3]),
      outcome: match[4] as SideEffect['outcome'],
      at: Number(match[5].replace(',', '.')) * 1000,
      consumerPid: Number(match[6]),
    };
    const key = runKey(effect.schedulerId, effect.executionKey);
    const list = byRun.get(key) ?? [];
    list.push(effect);
    byRun.set(key, list);
  }
  return {byRun, malformed, total};
}
