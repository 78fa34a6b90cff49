import {HttpErrors} from '@loopback/rest';
import {setTimeout as sleep} from 'node:timers/promises';
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
  /** None for a password change: an address lock (a shared NAT) must not block it. */
  address?: string;
}

/** The throttle key of a user's own password changes (not the sign-in's: see session.controller). */
export function passwordChangeKeys(userId: number): ThrottleKeys {
  return {account: `password-change:${userId}`};
}

/**
 * How long a lock read from the table is remembered here. A lock can end
 * early, when the attempt whose admission set it was right: remembered for
 * its whole length, a replica refused that user for up to 15 minutes.
 */
export const READ_LOCK_REMEMBERED_MS = 2000;

/** The throttle keys of one attempt: the account by its e-mail, and the client address. */
export function throttleKeys(
  email: string,
  address: string,
): Required<ThrottleKeys> {
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
 * Locks this process has seen, until they end. A lock a failure confirmed
 * ends only by time, so a copy gives every replica the table's answer while
 * sparing a flood of refused attempts their database round trip; one read
 * from the table may have been set by an attempt still under way, which
 * may be right and end it, so it is kept READ_LOCK_REMEMBERED_MS at most.
 * Bounded: expired entries go first, and past the bound the table decides.
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
  /**
   * Refused: locked for this many seconds (no password may be checked);
   * `busy`: by attempts under way, whose checks decide what comes next.
   */
  | {refusedFor: number; busy?: boolean}
  /** Counted against the account already: check the password. */
  | {admitted: true};

/** How often an attempt refused as busy asks again, and for how long in all. */
export const BUSY_POLL_MS = 250;
export const BUSY_WAIT_MS = 3000;

/**
 * A reservation whose attempt never came back (its process died while
 * hashing) stops holding the account after this long.
 */
export const STALE_RESERVATION_MS = 30_000;

/** An account's failures after one more ($3: forget failures before; as `failed` counts). */
const FAILURES = `CASE WHEN t.last_failure_at < $3 THEN 1 ELSE t.failures + 1 END`;

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
      keys.address ? (this.known.lockedUntil(keys.address, nowMs) ?? 0) : 0,
    );
    if (cached > nowMs) return Math.ceil((cached - nowMs) / 1000);
    const rows = (await this.execute(
      `SELECT key, failures, locked_until FROM login_throttle
        WHERE key IN ($1, $2) AND locked_until > $3`,
      [keys.account, keys.address ?? keys.account, this.clock()],
    )) as ThrottleRow[];
    let longest = 0;
    for (const row of rows) {
      const until = new Date(row.locked_until!).getTime();
      this.known.remember(
        row.key,
        Math.min(until, nowMs + READ_LOCK_REMEMBERED_MS),
        nowMs,
      );
      longest = Math.max(longest, Math.ceil((until - nowMs) / 1000));
    }
    return longest;
  }

  /**
   * `admit`, but an attempt refused only because others under way took the
   * account's free checks asks again every BUSY_POLL_MS, up to BUSY_WAIT_MS:
   * a right one among them clears the count, a wrong one sets the lock
   * (ten parallel sign-ins with the right password were five 429s).
   */
  async admitOrWait(keys: ThrottleKeys): Promise<Admission> {
    const deadline = this.clock().getTime() + BUSY_WAIT_MS;
    let admission = await this.admit(keys);
    for (
      let waited = 0;
      'busy' in admission && admission.busy && waited < BUSY_WAIT_MS;
      waited += BUSY_POLL_MS
    ) {
      await sleep(BUSY_POLL_MS);
      admission = await this.admit(keys);
      if (this.clock().getTime() > deadline) break;
    }
    return admission;
  }

  /**
   * `admitOrWait`, and a refusal becomes the 429 (Retry-After), answered
   * after REFUSAL_DELAY_MS so a flood cannot get its answers as fast as it
   * asks; resolves when the password may be checked.
   */
  async admitOrRefuse(keys: ThrottleKeys): Promise<void> {
    const admission = await this.admitOrWait(keys);
    if ('refusedFor' in admission) {
      await sleep(REFUSAL_DELAY_MS);
      throw tooManyAttempts(admission.refusedFor);
    }
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
    // Counted, and the lock left unset: only a failure sets it (`failed`),
    // so a lock anyone reads was earned by failures and ends by time.
    const rows = (await this.execute(
      `INSERT INTO login_throttle AS t (key, failures, last_failure_at)
       VALUES ($1, 1, $2)
       ON CONFLICT (key) DO UPDATE
         SET failures = ${FAILURES}, last_failure_at = $2, locked_until = NULL
         WHERE t.last_failure_at < $3
            OR t.locked_until <= $2
            OR (t.locked_until IS NULL
                AND (t.failures < $4 OR t.last_failure_at < $5))
       RETURNING failures`,
      [
        keys.account,
        now,
        new Date(now.getTime() - FORGET_AFTER_SECONDS * 1000),
        ACCOUNT_FREE_FAILURES,
        new Date(now.getTime() - STALE_RESERVATION_MS),
      ],
    )) as Array<{failures: number}>;
    if (rows.length === 0) {
      // Attempts under way took the account's free checks just now.
      return {refusedFor: 1, busy: true};
    }
    return {admitted: true};
  }

  /**
   * Counts a failed attempt against the client address (the account counted
   * it in `admit`); returns the longer lock of the two, in seconds.
   */
  async failed(keys: ThrottleKeys): Promise<number> {
    const now = this.clock();
    // The account counted this attempt at its admission: its lock follows.
    const counted = (await this.execute(
      // A SELECT around the UPDATE: the connector answers a bare UPDATE
      // with its row count, not its rows.
      `WITH counted AS (
         UPDATE login_throttle
            SET locked_until = CASE WHEN failures >= $3::int
                  THEN $2::timestamptz + make_interval(secs => LEAST($5::int,
                         $4::int * power(2, LEAST(30, failures - $3::int))))
                END
          -- Set once: the failure that locks is the one that says so.
          WHERE key = $1 AND locked_until IS NULL
          RETURNING failures)
       SELECT failures FROM counted`,
      [
        keys.account,
        now,
        ACCOUNT_FREE_FAILURES,
        FIRST_LOCK_SECONDS,
        MAX_LOCK_SECONDS,
      ],
    )) as Array<{failures: number}>;
    const accountLock = counted[0]
      ? lockSeconds(counted[0].failures, ACCOUNT_FREE_FAILURES)
      : 0;
    if (accountLock > 0) {
      this.known.remember(
        keys.account,
        now.getTime() + accountLock * 1000,
        now.getTime(),
      );
    }
    if (!keys.address) return accountLock;
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
    return Math.max(accountLock, seconds);
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

/** 429 with Retry-After and the uniform error body. */
export function tooManyAttempts(seconds: number): Error {
  return Object.assign(
    new HttpErrors.TooManyRequests(
      `Too many failed sign-in attempts; try again in ${seconds} s`,
    ),
    {headers: {'Retry-After': String(seconds)}},
  );
}
