import type {Pool} from 'pg';
import {setTimeout as sleep} from 'node:timers/promises';

/**
 * Leases on minute slots, so a fleet of producers evaluates each minute
 * once instead of once per producer. Claims do not depend on them: the
 * unique (scheduler, slot) key keeps runs exactly-once even when two
 * producers evaluate the same slot, as after a take-over.
 */
export interface SlotLeaseOptions {
  /** This producer process (host name and pid). */
  holder: string;
  /** A lease not done after this long is taken over by a peer. */
  ttlMs: number;
  /** How often a waiting peer looks at a lease it does not hold. */
  pollMs: number;
}

const time = (slots: Date[]) => slots.map(slot => slot.getTime());

export interface TakenLeases {
  /** Every slot taken, in plan order. */
  slots: Date[];
  /** Of those, the ones taken over from a peer whose lease expired. */
  takenOver: Date[];
}

/**
 * Takes every slot whose lease is free, expired (older than the TTL and not
 * done) or already ours (a retried tick). One statement: concurrent
 * producers cannot both win a slot, except by expiry.
 */
export async function takeSlotLeases(
  pool: Pool,
  slots: Date[],
  options: Pick<SlotLeaseOptions, 'holder' | 'ttlMs'>,
): Promise<TakenLeases> {
  if (slots.length === 0) return {slots: [], takenOver: []};
  const {rows} = await pool.query<{slot: Date; previous_holder: string | null}>(
    `INSERT INTO producer_slot_lease AS l (slot, holder)
     SELECT slot, $2 FROM unnest($1::timestamptz[]) AS slot
     ON CONFLICT (slot) DO UPDATE
        SET holder = EXCLUDED.holder, taken_at = now(), previous_holder = l.holder
      WHERE l.done_at IS NULL
        AND (l.holder = EXCLUDED.holder
             OR l.taken_at < now() - $3 * interval '1 millisecond')
     RETURNING slot, previous_holder`,
    [slots, options.holder, options.ttlMs],
  );
  const taken = new Set(time(rows.map(row => row.slot)));
  const fromPeer = new Set(
    time(
      rows
        .filter(
          row =>
            row.previous_holder !== null &&
            row.previous_holder !== options.holder,
        )
        .map(row => row.slot),
    ),
  );
  return {
    slots: slots.filter(slot => taken.has(slot.getTime())),
    takenOver: slots.filter(slot => fromPeer.has(slot.getTime())),
  };
}

/** Marks our leases done: peers stop waiting for them. */
export async function finishSlotLeases(
  pool: Pool,
  slots: Date[],
  holder: string,
): Promise<void> {
  if (slots.length === 0) return;
  await pool.query(
    `UPDATE producer_slot_lease SET done_at = now()
      WHERE slot = ANY($1::timestamptz[]) AND holder = $2 AND done_at IS NULL`,
    [slots, holder],
  );
}

/** Of `slots`, those a peer holds and has not finished. */
export async function unfinishedSlots(
  pool: Pool,
  slots: Date[],
): Promise<Date[]> {
  if (slots.length === 0) return [];
  const {rows} = await pool.query<{slot: Date}>(
    `SELECT slot FROM producer_slot_lease
      WHERE slot = ANY($1::timestamptz[]) AND done_at IS NULL`,
    [slots],
  );
  const open = new Set(time(rows.map(row => row.slot)));
  return slots.filter(slot => open.has(slot.getTime()));
}

/**
 * Waits for the peers holding `slots` to finish them, taking over each lease
 * that expires meanwhile; resolves with the slots taken over (to evaluate).
 * Slots the peers finish need nothing more from us.
 */
export async function awaitPeerSlots(
  pool: Pool,
  slots: Date[],
  options: SlotLeaseOptions,
  signal?: AbortSignal,
): Promise<Date[]> {
  let waiting = slots;
  while (waiting.length > 0 && !signal?.aborted) {
    const {slots: takenOver} = await takeSlotLeases(pool, waiting, options);
    if (takenOver.length > 0) return takenOver;
    waiting = await unfinishedSlots(pool, waiting);
    if (waiting.length > 0) await abortableSleep(options.pollMs, signal);
  }
  return [];
}

/** Resolves after `ms`, or at once when `signal` aborts (a shutdown). */
async function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  try {
    await sleep(ms, undefined, {signal});
  } catch (error) {
    if ((error as Error).name !== 'AbortError') throw error;
  }
}
