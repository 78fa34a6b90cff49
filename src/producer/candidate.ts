import type {Pool} from 'pg';

/** What evaluation needs of an active, non-stay-alive scheduler: no params. */
export interface Candidate {
  id: number;
  schedule: string | null;
  date_time: Date | null;
  timezone: string | null;
  /** When it last became eligible: no recurring run for an earlier slot. */
  activated_at: Date;
  /** When its row was last changed (its transaction's start). */
  updated_at?: Date;
  /** Calendars it follows (a plain list; ids of deleted calendars are ignored). */
  calendar_ids?: number[];
  /** The active window: no run for a slot before starts_at or after ends_at. */
  starts_at?: Date | null;
  ends_at?: Date | null;
  /**
   * The row version read (its `xmin`): any committed change to the row gives
   * it another, so an unchanged version means an unchanged candidate.
   */
  version?: string;
}

/** The candidate rows: both reads of a refresh must name the same set. */
const CANDIDATE_ROWS = 'FROM scheduler WHERE status AND NOT stay_alive';

const CANDIDATES = `
  SELECT id, schedule, date_time, timezone, activated_at, updated_at,
         calendar_ids, starts_at, ends_at, xmin::text AS version
    ${CANDIDATE_ROWS}`;

/**
 * Loaded on every tick, so a change of schedule or status applies at the
 * next evaluation. Served by the partial index on active schedulers.
 */
export async function loadCandidates(pool: Pool): Promise<Candidate[]> {
  const {rows} = await pool.query<Candidate>(CANDIDATES);
  return rows;
}

/** Candidates as they are now, from a read made earlier. */
export interface RefreshedCandidates {
  candidates: Candidate[];
  /** Whether any candidate was added, changed or gone since the earlier read. */
  changed: boolean;
}

/**
 * Brings candidates read earlier up to date with one light read of every
 * candidate's id and row version, and a full read of only the rows that are
 * new or changed since: the same set a fresh `loadCandidates` gives, at a
 * fraction of its cost when little changed. Exact whatever the time between
 * the reads: a row version is the id of the transaction that wrote it, so a
 * change committed after the earlier read, even by a transaction that began
 * long before it, carries a version that read did not see.
 */
export async function refreshCandidates(
  pool: Pool,
  earlier: Candidate[],
): Promise<RefreshedCandidates> {
  const {rows} = await pool.query<{id: number; version: string}>(
    `SELECT id, xmin::text AS version ${CANDIDATE_ROWS}`,
  );
  const earlierById = new Map<number, Candidate>();
  for (const candidate of earlier) earlierById.set(candidate.id, candidate);
  const candidates: Candidate[] = [];
  const reread: number[] = [];
  for (const row of rows) {
    const known = earlierById.get(row.id);
    if (known?.version === row.version) candidates.push(known);
    else reread.push(row.id);
  }
  // Fewer kept than read earlier: some changed or are gone.
  const changed = reread.length > 0 || candidates.length < earlier.length;
  if (reread.length > rows.length / 2) {
    // Most rows changed (a bulk import, a table rewrite): one full read is
    // cheaper than sending their ids back.
    return {candidates: await loadCandidates(pool), changed};
  }
  if (reread.length > 0) {
    // Read again, not from the version list: a row may have changed again,
    // or stopped being a candidate, since; this read has its current state.
    const fresh = await pool.query<Candidate>(
      `${CANDIDATES} AND id = ANY($1::int[])`,
      [reread],
    );
    candidates.push(...fresh.rows);
  }
  return {candidates, changed};
}
