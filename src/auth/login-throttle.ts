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

  /** Counts a failure against both keys; returns the longer lock it caused, in seconds. */
  async failed(keys: ThrottleKeys): Promise<number> {
    let longest = 0;
    for (const [key, free] of [
      [keys.account, ACCOUNT_FREE_FAILURES],
      [keys.address, ADDRESS_FREE_FAILURES],
    ] as const) {
      const now = this.clock();
      const forgetBefore = new Date(
        now.getTime() - FORGET_AFTER_SECONDS * 1000,
      );
      const rows = (await this.execute(
        `INSERT INTO login_throttle AS t (key, failures, last_failure_at)
         VALUES ($1, 1, $2)
         ON CONFLICT (key) DO UPDATE
           SET failures = CASE WHEN t.last_failure_at < $3 THEN 1 ELSE t.failures + 1 END,
               last_failure_at = $2
         RETURNING failures`,
        [key, now, forgetBefore],
      )) as Array<{failures: number}>;
      const seconds = lockSeconds(rows[0].failures, free);
      if (seconds > 0) {
        const until = new Date(now.getTime() + seconds * 1000);
        await this.execute(
          `UPDATE login_throttle SET locked_until = $2 WHERE key = $1`,
          [key, until],
        );
        this.known.remember(key, until.getTime(), now.getTime());
      }
      longest = Math.max(longest, seconds);
    }
    return longest;
  }

  /**
   * Now and then (once per PRUNE_EVERY_MS per process) deletes the rows of
   * keys whose failures are forgotten, so guessing many e-mails from many
   * addresses cannot grow the table for ever.
   */
  async pruneNowAndThen(): Promise<void> {
    if (this.known.prunePending(this.clock().getTime())) await this.prune();
  }

  /** A success clears the account's failures (the address keeps its count). */
  async succeeded(keys: ThrottleKeys): Promise<void> {
    await this.execute(`DELETE FROM login_throttle WHERE key = $1`, [
      keys.account,
    ]);
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
