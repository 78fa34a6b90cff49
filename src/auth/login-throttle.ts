import type {SqlExecutor} from '../audit/audit-event';

/** Failures an account may have before it is locked out for a while. */
export const ACCOUNT_FREE_FAILURES = 5;
/** Failures one client address may have (higher: offices share addresses). */
export const ADDRESS_FREE_FAILURES = 20;
/** The first lock; each further failure doubles it. */
export const FIRST_LOCK_SECONDS = 1;
/** The longest lock. */
export const MAX_LOCK_SECONDS = 15 * 60;
/**
 * How long a refused (locked) attempt waits before its 429. Refusing is
 * cheap, so without this a flooding client would get its answers as fast
 * as it asks and crowd out everyone else's requests; held back, 64
 * connections get about 128 answers a second, each costing nearly nothing.
 */
export const REFUSAL_DELAY_MS = 500;
/** How often a process deletes throttle rows nobody needs any more. */
export const PRUNE_EVERY_MS = 10 * 60 * 1000;
/** A failure older than this no longer counts (the counter starts again). */
export const FORGET_AFTER_SECONDS = 24 * 60 * 60;

export interface ThrottleKeys {
  account: string;
  address: string;
}

/** The throttle keys of one attempt: the account by its e-mail, and the client address. */
export function throttleKeys(email: string, address: string): ThrottleKeys {
  return {
    account: `account:${email.trim().toLowerCase().slice(0, 320)}`,
    address: `address:${address.slice(0, 64)}`,
  };
}

/** How long `failures` failures lock a key, in seconds (0: not locked). */
export function lockSeconds(failures: number, freeFailures: number): number {
  if (failures < freeFailures) return 0;
  return Math.min(
    MAX_LOCK_SECONDS,
    FIRST_LOCK_SECONDS * 2 ** Math.min(30, failures - freeFailures),
  );
}

/**
 * Locks this process has seen, until they end. A lock only ever ends by
 * time (no success can happen while it holds, on any replica), so a copy
 * gives every replica the same answer as the table while sparing a flood
 * of refused attempts their database round trip. Bounded: expired entries
 * go first, and past the bound the table alone decides.
 */
export class KnownLocks {
  private readonly until = new Map<string, number>();
  private lastPruneMs = 0;

  /** True at most once per PRUNE_EVERY_MS: time to drop forgotten throttle rows. */
  prunePending(nowMs: number): boolean {
    if (nowMs - this.lastPruneMs < PRUNE_EVERY_MS) return false;
    this.lastPruneMs = nowMs;
    return true;
  }

  constructor(private readonly maxEntries = 10_000) {}

  /** Milliseconds since the epoch the key is locked until, if known and still locked. */
  lockedUntil(key: string, nowMs: number): number | undefined {
    const until = this.until.get(key);
    if (until === undefined) return undefined;
    if (until <= nowMs) {
      this.until.delete(key);
      return undefined;
    }
    return until;
  }

  /** A success ended the key's lock (the attempt that set it was right). */
  forget(key: string): void {
    this.until.delete(key);
  }

  remember(key: string, untilMs: number, nowMs: number): void {
    if (this.until.size >= this.maxEntries) {
      for (const [known, ends] of this.until) {
        if (ends <= nowMs) this.until.delete(known);
      }
      if (this.until.size >= this.maxEntries) return;
    }
    this.until.set(key, untilMs);
  }
}

/** What `admit` decided about one attempt. */
export type Admission =
  /** Refused: locked for this many seconds (no password may be checked). */
  | {refusedFor: number}
  /** Counted against the account already; `lockedFor`: the lock it set (0: none). */
  | {lockedFor: number};

/** An account's failures after one more ($3: forget failures before; as `failed` counts). */
const FAILURES = `CASE WHEN t.last_failure_at < $3 THEN 1 ELSE t.failures + 1 END`;

/**
 * The lock `failures` failures set from $2 ($4 free failures, $5 the first
 * lock, $6 the longest, in seconds): `lockSeconds` in SQL, so the count and
 * the lock are written in one statement and no attempt slips between them.
 */
function lockUntil(failures: string): string {
  return `CASE WHEN ${failures} >= $4::int
            THEN $2::timestamptz + make_interval(secs => LEAST($6::int,
                   $5::int * power(2, LEAST(30, ${failures} - $4::int))))
          END`;
}

interface ThrottleRow {
  key: string;
  failures: number;
  locked_until: Date | null;
}

/**
 * Login throttling kept in PostgreSQL, so every API replica enforces one
 * limit: per account and per client address, failed attempts lock the key
 * for a time that doubles with each further failure, up to 15 minutes. A
 * locked attempt is refused before any password hashing. Time comes from
 * `clock`, so tests need not wait for a lock to pass.
 */
export class LoginThrottle {
  constructor(
    private readonly execute: SqlExecutor,
    private readonly clock: () => Date = () => new Date(),
    private readonly known: KnownLocks = new KnownLocks(),
  ) {}

  /** Seconds until the attempt may be made, or 0 when it may be made now. */
  async retryAfterSeconds(keys: ThrottleKeys): Promise<number> {
    const nowMs = this.clock().getTime();
    const cached = Math.max(
      this.known.lockedUntil(keys.account, nowMs) ?? 0,
      this.known.lockedUntil(keys.address, nowMs) ?? 0,
    );
    if (cached > nowMs) return Math.ceil((cached - nowMs) / 1000);
    const rows = (await this.execute(
      `SELECT key, failures, locked_until FROM login_throttle
        WHERE key IN ($1, $2) AND locked_until > $3`,
      [keys.account, keys.address, this.clock()],
    )) as ThrottleRow[];
    let longest = 0;
    for (const row of rows) {
      const until = new Date(row.locked_until!).getTime();
      this.known.remember(row.key, until, nowMs);
      longest = Math.max(longest, Math.ceil((until - nowMs) / 1000));
    }
    return longest;
  }

  /**
   * Decides whether an attempt may check its password. A lock on either key
   * refuses it (before any hashing or write). Otherwise the attempt is
   * counted against the account *before* its password is checked, and only
   * while the account may make one (fewer than ACCOUNT_FREE_FAILURES
   * failures, or its lock ended): attempts sent side by side are counted
   * one after another under the row's lock, so a burst gets the checks the
   * same attempts one at a time would get (each got one: 15 parallel
   * guesses were 15 checks). A success then clears the count; a failure
   * counts against the address too (`failed`).
   */
  async admit(keys: ThrottleKeys): Promise<Admission> {
    const wait = await this.retryAfterSeconds(keys);
    if (wait > 0) return {refusedFor: wait};
    const now = this.clock();
    const rows = (await this.execute(
      `INSERT INTO login_throttle AS t (key, failures, last_failure_at, locked_until)
       VALUES ($1, 1, $2, ${lockUntil('1')})
       ON CONFLICT (key) DO UPDATE
         SET failures = ${FAILURES},
             last_failure_at = $2,
             locked_until = ${lockUntil(FAILURES)}
         WHERE t.last_failure_at < $3 OR t.failures < $4
            OR t.locked_until IS NULL OR t.locked_until <= $2
       RETURNING failures`,
      [
        keys.account,
        now,
        new Date(now.getTime() - FORGET_AFTER_SECONDS * 1000),
        ACCOUNT_FREE_FAILURES,
        FIRST_LOCK_SECONDS,
        MAX_LOCK_SECONDS,
      ],
    )) as Array<{failures: number}>;
    if (rows.length === 0) {
      // Another attempt took the account's last free check just now.
      return {refusedFor: Math.max(1, await this.retryAfterSeconds(keys))};
    }
    const seconds = lockSeconds(rows[0].failures, ACCOUNT_FREE_FAILURES);
    if (seconds > 0) {
      this.known.remember(
        keys.account,
        now.getTime() + seconds * 1000,
        now.getTime(),
      );
    }
    return {lockedFor: seconds};
  }

  /**
   * Counts a failed attempt against the client address (the account counted
   * it in `admit`); returns the longer lock of the two, in seconds.
   */
  async failed(
    keys: ThrottleKeys,
    admitted: {lockedFor: number},
  ): Promise<number> {
    const now = this.clock();
    const forgetBefore = new Date(now.getTime() - FORGET_AFTER_SECONDS * 1000);
    const rows = (await this.execute(
      `INSERT INTO login_throttle AS t (key, failures, last_failure_at)
       VALUES ($1, 1, $2)
       ON CONFLICT (key) DO UPDATE
         SET failures = CASE WHEN t.last_failure_at < $3 THEN 1 ELSE t.failures + 1 END,
             last_failure_at = $2
       RETURNING failures`,
      [keys.address, now, forgetBefore],
    )) as Array<{failures: number}>;
    const seconds = lockSeconds(rows[0].failures, ADDRESS_FREE_FAILURES);
    if (seconds > 0) {
      const until = new Date(now.getTime() + seconds * 1000);
      await this.execute(
        `UPDATE login_throttle SET locked_until = $2 WHERE key = $1`,
        [keys.address, until],
      );
      this.known.remember(keys.address, until.getTime(), now.getTime());
    }
    return Math.max(admitted.lockedFor, seconds);
  }

  /**
   * Now and then (once per PRUNE_EVERY_MS per process) deletes the rows of
   * keys whose failures are forgotten, so guessing many e-mails from many
   * addresses cannot grow the table for ever.
   */
  async pruneNowAndThen(): Promise<void> {
    if (this.known.prunePending(this.clock().getTime())) await this.prune();
  }

  /**
   * A success clears the account's failures and the lock its own admission
   * may have set (the address keeps its count).
   */
  async succeeded(keys: ThrottleKeys): Promise<void> {
    await this.execute(`DELETE FROM login_throttle WHERE key = $1`, [
      keys.account,
    ]);
    this.known.forget(keys.account);
  }

  /** Drops keys whose last failure is long forgotten (called now and then). */
  async prune(): Promise<void> {
    const before = new Date(
      this.clock().getTime() - FORGET_AFTER_SECONDS * 1000,
    );
    await this.execute(
      `DELETE FROM login_throttle WHERE last_failure_at < $1 AND (locked_until IS NULL OR locked_until < $2)`,
      [before, this.clock()],
    );
  }
}
