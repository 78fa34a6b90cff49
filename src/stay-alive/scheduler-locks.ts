import {Client} from 'pg';
import type {Logger} from '../logging/logger';

/** First key of our advisory locks, so they never meet another user's. */
export const STAY_ALIVE_LOCK_SPACE = 0x53544159; // "STAY"

export interface LockConnectionTimings {
  /** A lock query unanswered this long counts as a lost connection. */
  queryTimeoutMs: number;
  /** Idle time before the OS starts TCP keepalive probes on the lock socket. */
  keepAliveDelayMs: number;
}

/**
 * Far below the supervisor's reconcile interval: a connection that stops
 * answering (a network black hole, no RST) is noticed within seconds, not
 * after the OS's two-hour keepalive default.
 */
export const DEFAULT_LOCK_TIMINGS: LockConnectionTimings = {
  queryTimeoutMs: 5000,
  keepAliveDelayMs: 10_000,
};

/**
 * Session advisory locks, one per stay-alive scheduler, held on one dedicated
 * connection: only the supervisor holding a scheduler's lock runs its worker.
 * PostgreSQL releases them when the session ends, so a dead supervisor frees
 * its schedulers; when our connection dies, `onLost` tells the supervisor it
 * no longer owns anything and must stop its children at once.
 */
export class SchedulerLocks {
  private client?: Client;
  private readonly held = new Set<number>();

  constructor(
    private readonly databaseUrl: string,
    private readonly logger: Logger,
    private readonly onLost: () => void,
    /** Shown in pg_stat_activity, to tell supervisors apart. */
    private readonly name = 'task-scheduler stay-alive',
    private readonly timings: LockConnectionTimings = DEFAULT_LOCK_TIMINGS,
  ) {}

  get connected(): boolean {
    return this.client !== undefined;
  }

  /** Scheduler ids whose lock this supervisor holds. */
  heldIds(): number[] {
    return [...this.held];
  }

  async connect(): Promise<void> {
    if (this.client) return;
    const client = new Client({
      connectionString: this.databaseUrl,
      keepAlive: true,
      keepAliveInitialDelayMillis: this.timings.keepAliveDelayMs,
      // Client-side: rejects even when the server never sees the query.
      query_timeout: this.timings.queryTimeoutMs,
      statement_timeout: this.timings.queryTimeoutMs,
      connectionTimeoutMillis: this.timings.queryTimeoutMs,
      application_name: this.name.slice(0, 63),
    });
    client.on('error', error => this.lose(client, error.message));
    client.on('end', () => this.lose(client, 'connection ended'));
    await client.connect();
    this.client = client;
  }

  async tryLock(schedulerId: number): Promise<boolean> {
    if (this.held.has(schedulerId)) return true;
    const {rows} = await this.require().query<{locked: boolean}>(
      'SELECT pg_try_advisory_lock($1, $2) AS locked',
      [STAY_ALIVE_LOCK_SPACE, schedulerId],
    );
    if (rows[0].locked) this.held.add(schedulerId);
    return rows[0].locked;
  }

  async unlock(schedulerId: number): Promise<void> {
    if (!this.held.delete(schedulerId) || !this.client) return;
    await this.client.query('SELECT pg_advisory_unlock($1, $2)', [
      STAY_ALIVE_LOCK_SPACE,
      schedulerId,
    ]);
  }

  /**
   * Asks the server which of our locks it still sees: a heartbeat that also
   * notices a connection that died or went silent without an error event
   * (the query times out), and locks the session no longer holds. Either way
   * the supervisor owns nothing any more and is told so.
   */
  async verify(): Promise<void> {
    const client = this.require();
    let rows: Array<{objid: string}>;
    try {
      ({rows} = await client.query<{objid: string}>(
        `SELECT objid FROM pg_locks
          WHERE locktype = 'advisory' AND classid = $1::oid AND objsubid = 2
            AND granted AND pid = pg_backend_pid()`,
        [STAY_ALIVE_LOCK_SPACE],
      ));
    } catch (error) {
      this.lose(client, (error as Error).message);
      throw error;
    }
    const seen = new Set(rows.map(row => Number(row.objid)));
    const missing = [...this.held].filter(id => !seen.has(id));
    if (missing.length > 0) {
      const reason = `the server no longer holds the locks of schedulers ${missing.join(', ')}`;
      this.lose(client, reason);
      throw new Error(reason);
    }
  }

  /** Idempotent: ends the session, which releases every lock. */
  async close(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.held.clear();
    await client?.end().catch(() => undefined);
  }

  private require(): Client {
    if (!this.client) throw new Error('lock connection is not open');
    return this.client;
  }

  private lose(client: Client, reason: string): void {
    if (this.client !== client) return;
    this.client = undefined;
    const lost = [...this.held];
    this.held.clear();
    client.end().catch(() => undefined);
    this.logger.error('Stay-alive lock connection lost', {
      error: reason,
      schedulers: lost,
    });
    this.onLost();
  }
}
