import {setTimeout as sleep} from 'node:timers/promises';
import type {Pool} from 'pg';
import type {AppConfig} from '../config';
import type {Logger} from '../logging/logger';
import type {Metrics} from '../metrics/metrics';
import type {TaskPublisher} from '../queue/task-publisher';
import {CronCache} from '../scheduling/compiled-cron';
import {addMinutes, minuteSlot, planSlots} from '../scheduling/slots';
import {SlotCalendars} from '../scheduling/calendar-match';
import {LoadedCalendars, loadCalendars} from './calendar-loader';
import {Candidate, loadCandidates, refreshCandidates} from './candidate';
import {earlyEvaluationHolds, ReadAhead, ReadAheadUse} from './read-ahead';
import {endActiveWindows} from './window-ender';
import {publishClaims} from './claim-publisher';
import {DueRun, DueWindow, evaluateDue, Evaluation} from './due-evaluator';
import {claimRuns} from './execution-claimer';
import type {AfterClaimFaultPoint} from './fault-point';
import {awaitPeerSlots, finishSlotLeases, takeSlotLeases} from './slot-lease';
import {sweepUnpublished} from './sweeper';
import {MissedRuns} from './missed-runs';
import {RowWarnings} from './row-warnings';
import {readSharedLastSlot, saveSharedLastSlot} from './tick-progress';
import {dispatchLagRecorder} from './dispatch-lag';
import {
  EvaluationCounts,
  NOTHING_EVALUATED,
  sumCounts,
  TickReport,
} from './tick-report';

export type ProducerConfig = Pick<
  AppConfig,
  | 'containerId'
  | 'cronTimeZone'
  | 'cronCatchUpMinutes'
  | 'cronSweepAfterMs'
  | 'cronSweepBudgetMs'
  | 'cronSlotLeaseMs'
> & {
  /**
   * Clock milliseconds per real millisecond (above 1 only for the chaos
   * suite's fast clock). Claim ages are read from the database's real clock,
   * so the sweep delay, given in clock time, is divided by it.
   */
  clockRate?: number;
  /**
   * The database's clock. When given, a slot is evaluated only once that
   * clock has reached it (within CLOCK_AHEAD_TOLERANCE_MS): set on real
   * time, unset for the tests' own clocks, which are not the database's.
   */
  databaseClock?: () => Promise<Date>;
  /** Runs claimed per statement (claimBatchSize of the pool mode; CLAIM_BATCH if unset). */
  claimBatchSize?: number;
};

/**
 * How far this host's clock may run ahead of the database's before a tick
 * waits for the database: within LATE_ACTIVATION_MS, whose look back
 * catches a scheduler activated in the moment such a tick came early. A
 * producer further ahead evaluated minutes before they began (a minute
 * 100 s early), and took their leases from its peers, so schedulers
 * created in between missed their first runs.
 */
export const CLOCK_AHEAD_TOLERANCE_MS = 2000;

/**
 * The longest a tick waits for the database's clock to reach its slots:
 * less than a minute, so it ends before the next tick is due. A host
 * further ahead leaves the minutes to a later tick (and to its peers), and
 * says so as an error every minute until its clock is put right.
 */
export const MAX_CLOCK_WAIT_MS = 50_000;

/** The database's own clock, as `databaseClock` reads it on real time. */
export async function readDatabaseClock(pool: Pool): Promise<Date> {
  const {rows} = await pool.query<{now: Date}>(
    'SELECT clock_timestamp() AS now',
  );
  return rows[0].now;
}

/** What a tick's own leased slots gave, before it waits for its peers. */
interface OwnSlots {
  mine: Date[];
  counts: EvaluationCounts;
  takenOverAtStart: number;
}

/** How often a producer waiting for a peer's slot looks at its lease. */
const LEASE_POLL_MS = 250;

/**
 * How long before a slot an activation is looked at again by the next tick.
 * `activated_at` is the database's clock when the row was written, not when
 * it committed: a scheduler activated just before a boundary and committed
 * after that slot's tick read the candidates (a slow commit, or a database
 * clock behind the producer's) is due in the slot but was not seen. The
 * next tick evaluates such schedulers for the slot before its own, and the
 * ledger's unique key keeps a run that was claimed from being claimed twice.
 */
export const LATE_ACTIVATION_MS = 5000;

/**
 * One producer instance. `tick(now)` evaluates every minute slot since the
 * last one it evaluated, claims the due runs and publishes what it claimed.
 * Time is an argument: only the ticker reads the clock.
 */
export class Producer {
  private lastEvaluated?: Date;
  /** Aborted by stop(): a wait for a peer's slot lease ends at once. */
  private readonly stopping = new AbortController();
  private readonly cache = new CronCache();
  private readonly rowWarnings: RowWarnings;
  private readonly missedRuns: MissedRuns;
  /**
   * The next tick's reading and evaluation, made ahead of it (`prepare`):
   * unset until the read is done, so a tick never waits for a slow one.
   */
  private readAhead?: ReadAhead;
  /**
   * Whether the last tick that planned slots evaluated one itself: only
   * then is the next minute read ahead. In a fleet that is the producer
   * that took the last lease, which usually takes the next; its peers read
   * nothing ahead, and one that does take a lease reads in full.
   */
  private evaluatedOwnSlot = false;
  /** What the running tick made of it. */
  private readAheadUse: ReadAheadUse = 'none';

  constructor(
    private readonly pool: Pool,
    private readonly publisher: TaskPublisher,
    private readonly config: ProducerConfig,
    private readonly logger: Logger,
    /** Test-only (chaos suite): may kill the process between claim and publish. */
    private readonly afterClaim?: AfterClaimFaultPoint,
    private readonly metrics?: Metrics,
  ) {
    this.rowWarnings = new RowWarnings(logger);
    this.missedRuns = new MissedRuns(pool, logger, config, this.cache);
  }

  /**
   * Ends a wait for peers' slots now instead of after their lease (up to
   * CRON_SLOT_LEASE_MS), so a shutdown is not held back by a live peer. The
   * fleet's progress is not moved on for slots still waited for: they are
   * the peer's, or the next producer's to take over.
   */
  stop(): void {
    this.stopping.abort();
  }

  /**
   * Wakes what the next tick uses first, just before it (see WARM_UP_MS):
   * each idle pooled session runs a query, one of them the tick's own first
   * read (the candidates' row versions, against the reading made ahead; its
   * result is thrown away, the tick reads again). A session idle for a minute
   * answered its first query 40-73 ms late, and the row-version read after
   * a minute without it took 63-85 ms against 23-27 ms warmed this way.
   */
  async warm(): Promise<void> {
    const early = this.readAhead;
    const others = Math.max(0, this.pool.idleCount - 1);
    await Promise.all([
      early
        ? refreshCandidates(this.pool, early.candidates)
        : this.pool.query('SELECT 1'),
      ...Array.from({length: others}, () => this.pool.query('SELECT 1')),
    ]);
  }

  /**
   * Reads and evaluates, a few seconds ahead, what the tick at `tickAt` will
   * need, so that tick reads only what changed since. Nothing before the
   * first tick (the slots to plan are not known yet). Never fails: a failed
   * read is logged and the tick reads in full.
   */
  async prepare(tickAt: Date): Promise<void> {
    this.readAhead = undefined;
    if (!this.lastEvaluated || !this.evaluatedOwnSlot) return;
    const plan = planSlots(
      tickAt,
      this.lastEvaluated,
      this.config.cronCatchUpMinutes,
    );
    if (plan.due.length === 0) return;
    try {
      this.readAhead = await this.readEarly(tickAt, plan.due);
    } catch (error) {
      this.logger.warn('Reading ahead of the tick failed: it reads in full', {
        error: (error as Error).message,
      });
    }
  }

  private async readEarly(tickAt: Date, slots: Date[]): Promise<ReadAhead> {
    const candidates = await loadCandidates(this.pool);
    const loaded = await loadCalendars(this.pool, candidates, this.cache);
    const window = this.dueWindow(tickAt);
    const evaluation = this.evaluateSlots(candidates, slots, window, loaded);
    return {
      slots,
      window,
      candidates,
      calendarsVersion: loaded.version,
      evaluation,
    };
  }

  async tick(now: Date): Promise<TickReport> {
    const started = process.hrtime.bigint();
    this.readAheadUse = 'none';
    this.lastEvaluated ??= await readSharedLastSlot(this.pool);
    const plan = planSlots(
      now,
      this.lastEvaluated,
      this.config.cronCatchUpMinutes,
    );
    // Slots the database's clock has not reached wait for a later tick.
    const due = await this.slotsBegun(plan.due, now);
    const own =
      due.length > 0
        ? await this.evaluateOwnSlots(now, due, plan.skipped)
        : undefined;
    // Before waiting for peers: a dead peer's lease must not hold back the
    // sweep that publishes the claims it left behind.
    const sweep = await this.sweep(now);
    const leased = own
      ? await this.evaluatePeerSlots(now, due, own)
      : {counts: NOTHING_EVALUATED, byPeers: 0, takenOver: 0};
    if (own) this.evaluatedOwnSlot = own.mine.length + leased.takenOver > 0;
    const windowEnded = own ? await this.endWindows(due) : 0;
    const full: TickReport = {
      ...leased.counts,
      window_ended: windowEnded,
      slots_by_peers: leased.byPeers,
      slots_taken_over: leased.takenOver,
      read_ahead: this.readAheadUse,
      swept: sweep.republished,
      skipped_stale: sweep.skipped,
      duration_ms: Number(process.hrtime.bigint() - started) / 1e6,
    };
    this.logger.info('Tick completed', {
      ...full,
      duration_ms: Math.round(full.duration_ms),
    });
    this.recordTick(full);
    return full;
  }

  /**
   * Of `slots` (ascending), those the database's clock has reached, give or
   * take CLOCK_AHEAD_TOLERANCE_MS. A host ahead by less than
   * MAX_CLOCK_WAIT_MS waits here until the database gets there, so its
   * minutes fire on the database's time and none falls out of the catch-up
   * window; one further ahead leaves them planned for a later tick.
   */
  private async slotsBegun(slots: Date[], now: Date): Promise<Date[]> {
    const readClock = this.config.databaseClock;
    if (!readClock || slots.length === 0) return slots;
    const newest = slots[slots.length - 1].getTime();
    let databaseNow = (await readClock()).getTime();
    const wait = newest - CLOCK_AHEAD_TOLERANCE_MS - databaseNow;
    if (wait > 0 && wait <= MAX_CLOCK_WAIT_MS) {
      this.logger.warn(
        "This host's clock is ahead of the database's: the tick waits for it",
        {ahead_ms: now.getTime() - databaseNow, wait_ms: wait},
      );
      await abortableWait(wait, this.stopping.signal);
      databaseNow = (await readClock()).getTime();
    }
    const begun = slots.filter(
      slot => slot.getTime() <= databaseNow + CLOCK_AHEAD_TOLERANCE_MS,
    );
    if (begun.length < slots.length) {
      this.logger.error(
        "This host's clock is ahead of the database's: minutes that have not begun there are not evaluated yet",
        {
          ahead_ms: now.getTime() - databaseNow,
          tolerance_ms: CLOCK_AHEAD_TOLERANCE_MS,
          waiting_slots: slots.slice(begun.length).map(s => s.toISOString()),
        },
      );
    }
    return begun;
  }

  /**
   * Evaluates the slots whose lease this producer takes (free ones, and
   * expired ones it takes over) and marks them done for its peers.
   */
  private async evaluateOwnSlots(
    now: Date,
    due: Date[],
    skipped: Date[],
  ): Promise<OwnSlots> {
    const lease = this.leaseOptions();
    const {slots: mine, takenOver} = await takeSlotLeases(
      this.pool,
      due,
      lease,
    );
    if (takenOver.length > 0) this.logTakeOver(takenOver, lease.ttlMs);
    const counts =
      mine.length > 0
        ? await this.evaluate(now, mine, skipped)
        : NOTHING_EVALUATED;
    await finishSlotLeases(this.pool, mine, lease.holder);
    return {mine, counts, takenOverAtStart: takenOver.length};
  }

  /**
   * Waits for peers to finish the planned slots they hold, and evaluates any
   * whose lease expires unfinished (its holder died or stalls). Only then is
   * the plan done and the last evaluated slot moved on.
   */
  private async evaluatePeerSlots(
    now: Date,
    due: Date[],
    own: OwnSlots,
  ): Promise<{counts: EvaluationCounts; byPeers: number; takenOver: number}> {
    const lease = this.leaseOptions();
    const isMine = new Set(own.mine.map(slot => slot.getTime()));
    let peers = due.filter(slot => !isMine.has(slot.getTime()));
    const held = peers.length;
    let counts = own.counts;
    let takenLater = 0;
    const {signal} = this.stopping;
    while (peers.length > 0) {
      const expired = await awaitPeerSlots(this.pool, peers, lease, signal);
      if (signal.aborted) {
        return {counts, byPeers: 0, takenOver: own.takenOverAtStart};
      }
      if (expired.length === 0) break;
      this.logTakeOver(expired, lease.ttlMs);
      counts = sumCounts(counts, await this.evaluate(now, expired, []));
      await finishSlotLeases(this.pool, expired, lease.holder);
      takenLater += expired.length;
      const isExpired = new Set(expired.map(slot => slot.getTime()));
      peers = peers.filter(slot => !isExpired.has(slot.getTime()));
    }
    this.lastEvaluated = due[due.length - 1];
    await saveSharedLastSlot(this.pool, this.lastEvaluated);
    return {
      counts,
      byPeers: held - takenLater,
      takenOver: own.takenOverAtStart + takenLater,
    };
  }

  private leaseOptions() {
    return {
      holder: this.config.containerId,
      ttlMs: this.config.cronSlotLeaseMs,
      pollMs: LEASE_POLL_MS,
    };
  }

  private recordTick(report: TickReport): void {
    const {metrics} = this;
    if (!metrics) return;
    metrics.observe('producerTickDuration', {}, report.duration_ms / 1000);
    metrics.set('producerLastTick', {}, Date.now() / 1000);
    metrics.count('claims', {result: 'claimed'}, report.claimed);
    metrics.count(
      'claims',
      {result: 'already_claimed'},
      report.already_claimed,
    );
    metrics.count('claims', {result: 'skipped'}, report.skipped_overlap);
    metrics.count('sweeps', {result: 'republished'}, report.swept);
    metrics.count('sweeps', {result: 'skipped_stale'}, report.skipped_stale);
  }

  private logTakeOver(slots: Date[], leaseMs: number): void {
    this.logger.warn('Slot lease expired unfinished: taking it over', {
      slots: slots.map(slot => slot.toISOString()),
      lease_ms: leaseMs,
    });
  }

  /** Evaluates the planned slots: claims and publishes what is due. */
  private async evaluate(
    now: Date,
    slots: Date[],
    skippedSlots: Date[],
  ): Promise<EvaluationCounts> {
    const early = this.takeReadAhead();
    const {candidates, changed} = early
      ? await refreshCandidates(this.pool, early.candidates)
      : {candidates: await loadCandidates(this.pool), changed: true};
    const loaded = await loadCalendars(this.pool, candidates, this.cache);
    if (skippedSlots.length > 0) {
      // A fire a calendar skips was never due: it is not a missed run.
      await this.missedRuns.reportSkipped(
        candidates,
        skippedSlots,
        new SlotCalendars(loaded.calendars, skippedSlots),
      );
    }
    this.rowWarnings.calendarProblems(loaded.problems);
    const window = this.dueWindow(now);
    const holds =
      early &&
      earlyEvaluationHolds(
        early,
        {slots, window, calendarsVersion: loaded.version},
        changed,
      );
    if (early) this.readAheadUse = holds ? 'reused' : 'refreshed';
    const evaluation = holds
      ? early.evaluation
      : this.evaluateSlots(candidates, slots, window, loaded);
    this.rowWarnings.invalidRows(evaluation.invalid);
    const missed = await this.missedRuns.disableOneTime(evaluation.missed);
    const late = this.lateActivations(window, slots[0], candidates, loaded);
    // The earlier minute first, as in a catch-up: the overlap check of the
    // later one leaves out runs this tick claimed for it.
    const due = [...late.due, ...evaluation.due];
    const claims = await claimRuns(
      this.pool,
      due,
      this.config.containerId,
      this.config.claimBatchSize,
    );
    const lateClaims = claims.filter(
      claim => claim.slot.getTime() === late.slot.getTime(),
    ).length;
    this.afterClaim?.(claims.length);
    const toSend = claims.filter(claim => !claim.skipped);
    const published = await publishClaims(
      this.pool,
      this.publisher,
      toSend,
      dispatchLagRecorder(this.metrics, 'cron'),
    );
    return {
      slots: slots.length,
      due: evaluation.due.length,
      claimed: toSend.length,
      // Found claimed by a peer; a look back finding its run is not counted.
      already_claimed: evaluation.due.length - (claims.length - lateClaims),
      late_activated: lateClaims,
      skipped_overlap: claims.filter(c => c.skipped && !c.skipped_by_calendar)
        .length,
      skipped_calendar: claims.filter(c => c.skipped_by_calendar).length,
      published,
      invalid: evaluation.invalid.length,
      missed_one_time: missed,
    };
  }

  /** What is due of `candidates` in `slots`, in the producer's zone and calendars. */
  private evaluateSlots(
    candidates: Candidate[],
    slots: Date[],
    window: DueWindow,
    loaded: LoadedCalendars,
  ): Evaluation {
    return evaluateDue(
      candidates,
      slots,
      window,
      this.config.cronTimeZone,
      this.cache,
      new SlotCalendars(loaded.calendars, slots),
    );
  }

  /**
   * The runs, in the minute before `first`, of recurring schedulers
   * activated within LATE_ACTIVATION_MS before that minute: its tick may
   * have read the candidates before their activation committed. A row
   * changed at or after that minute began is left out: that tick may have
   * seen it as it was (a window or calendar that refused the run) and
   * decided rightly. Nothing for a minute outside the catch-up window
   * (none with CRON_CATCHUP_MINUTES=0).
   */
  private lateActivations(
    window: DueWindow,
    first: Date,
    candidates: Candidate[],
    loaded: LoadedCalendars,
  ): {slot: Date; due: DueRun[]} {
    const slot = addMinutes(first, -1);
    if (slot < window.oldest) return {slot, due: []};
    const from = slot.getTime() - LATE_ACTIVATION_MS;
    const recent = candidates.filter(candidate => {
      // Number(): a stored infinity arrives as a number, not a Date.
      const activated = Number(candidate.activated_at);
      return (
        candidate.schedule !== null &&
        activated >= from &&
        activated < slot.getTime() &&
        Number(candidate.updated_at) < slot.getTime()
      );
    });
    if (recent.length === 0) return {slot, due: []};
    const {due} = this.evaluateSlots(recent, [slot], window, loaded);
    return {slot, due};
  }

  /**
   * The reading made ahead of this tick, once: a second evaluation in the
   * same tick (a peer's slot taken over) reads in full. One still under way
   * is not waited for (the database may be slow now): it is left to finish
   * and the tick reads in full.
   */
  private takeReadAhead(): ReadAhead | undefined {
    const early = this.readAhead;
    this.readAhead = undefined;
    return early;
  }

  /** The minutes runs may still be fired for: the catch-up window. */
  private dueWindow(now: Date): DueWindow {
    const current = minuteSlot(now);
    return {
      current,
      oldest: addMinutes(current, -this.config.cronCatchUpMinutes),
    };
  }

  private async sweep(
    now: Date,
  ): Promise<{republished: number; skipped: number}> {
    try {
      const result = await sweepUnpublished(this.pool, this.publisher, {
        olderThanMs:
          this.config.cronSweepAfterMs / (this.config.clockRate ?? 1),
        staleBefore: this.dueWindow(now).oldest,
        budgetMs: this.config.cronSweepBudgetMs,
        onConfirmed: dispatchLagRecorder(this.metrics, 'sweep'),
      });
      if (result.republished > 0) {
        this.logger.warn('Republished claims left unpublished', {
          component: 'sweeper',
          count: result.republished,
        });
      }
      if (result.skipped > 0) {
        this.logger.warn('Claims older than the catch-up window skipped', {
          component: 'sweeper',
          count: result.skipped,
          catch_up_minutes: this.config.cronCatchUpMinutes,
        });
      }
      return result;
    } catch (error) {
      this.logger.error('Sweep failed', {
        component: 'sweeper',
        error: (error as Error).message,
      });
      return {republished: 0, skipped: 0};
    }
  }

  /**
   * Switches off the schedulers whose active window ended before the last
   * slot of this tick's plan (every slot up to it is evaluated by now, here
   * or by a peer), with a reason and an audit event in the same statement.
   */
  private async endWindows(planned: Date[]): Promise<number> {
    const ended = await endActiveWindows(
      this.pool,
      planned[planned.length - 1],
    );
    for (const row of ended) {
      this.logger.info('Scheduler switched off: its active window ended', {
        scheduler_id: row.id,
        ends_at: row.ends_at.toISOString(),
      });
    }
    return ended.length;
  }
}

/** Resolves after `ms`, or at once when `signal` aborts (a shutdown). */
async function abortableWait(ms: number, signal: AbortSignal): Promise<void> {
  await sleep(ms, undefined, {signal}).catch(() => undefined);
}
