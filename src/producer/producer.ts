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
import {noticeMissedRuns} from '../notices/missed-runs-notice';
import {endActiveWindows} from './window-ender';
import {ConfirmedListener, publishClaims} from './claim-publisher';
import {
  countDuePerScheduler,
  DueRun,
  DueWindow,
  evaluateDue,
  Evaluation,
  InvalidRow,
  MissedOneTime,
} from './due-evaluator';
import {claimRuns} from './execution-claimer';
import type {AfterClaimFaultPoint} from './fault-point';
import {awaitPeerSlots, finishSlotLeases, takeSlotLeases} from './slot-lease';
import {sweepUnpublished} from './sweeper';

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
};

export interface TickReport {
  slots: number;
  due: number;
  claimed: number;
  already_claimed: number;
  /** Runs of overlap_policy skip schedulers recorded skipped: an earlier run was still going. */
  skipped_overlap: number;
  /** Runs a calendar skipped (blackout matched, or no allowed calendar did). */
  skipped_calendar: number;
  /** Schedulers switched off because their active window ended. */
  window_ended: number;
  /**
   * Runs claimed for the minute before the tick's slots: their scheduler's
   * activation, just before that minute, committed after its tick had read.
   */
  late_activated: number;
  published: number;
  /** Schedulers skipped because their schedule, zone or date is unreadable. */
  invalid: number;
  /** One-time schedulers switched off: their moment is older than the catch-up window. */
  missed_one_time: number;
  /** Slots a peer producer held the lease of and evaluated. */
  slots_by_peers: number;
  /** Slots whose peer's lease expired unfinished, evaluated here instead. */
  slots_taken_over: number;
  /** What the tick made of the reading done ahead of it. */
  read_ahead: ReadAheadUse;
  swept: number;
  /** Unpublished claims older than the catch-up window, marked skipped. */
  skipped_stale: number;
  duration_ms: number;
}

type EvaluationCounts = Omit<
  TickReport,
  | 'swept'
  | 'skipped_stale'
  | 'duration_ms'
  | 'slots_by_peers'
  | 'slots_taken_over'
  | 'window_ended'
  | 'read_ahead'
>;

const NOTHING_EVALUATED: EvaluationCounts = {
  slots: 0,
  due: 0,
  claimed: 0,
  already_claimed: 0,
  skipped_overlap: 0,
  skipped_calendar: 0,
  late_activated: 0,
  published: 0,
  invalid: 0,
  missed_one_time: 0,
};

function sum(a: EvaluationCounts, b: EvaluationCounts): EvaluationCounts {
  const total = {...a};
  for (const key of Object.keys(b) as Array<keyof EvaluationCounts>) {
    total[key] += b[key];
  }
  return total;
}

/**
 * Records slot → confirm (real time, seconds) for each confirmed run: the
 * dispatch-lag histogram. Nothing without metrics.
 */
export function dispatchLagRecorder(
  metrics: Metrics | undefined,
  trigger: 'cron' | 'sweep',
): ConfirmedListener | undefined {
  // The labelled child once per batch: no label hashing per run.
  const histogram = metrics?.get('dispatchLag')?.labels({trigger});
  if (!histogram) return undefined;
  return (claims, confirmed) => {
    for (const claim of claims) {
      const at = confirmed.get(claim.execution_id);
      if (at === undefined) continue;
      const lag = (at.getTime() - new Date(claim.slot).getTime()) / 1000;
      histogram.observe(Math.max(0, lag));
    }
  };
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

/** Warned-about rows are remembered up to this many, then forgotten at once. */
const WARNED_LIMIT = 10_000;

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
  private readonly warnedInvalid = new Set<string>();
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
  ) {}

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
    this.lastEvaluated ??= await this.sharedLastSlot();
    const plan = planSlots(
      now,
      this.lastEvaluated,
      this.config.cronCatchUpMinutes,
    );
    const own =
      plan.due.length > 0
        ? await this.evaluateOwnSlots(now, plan.due, plan.skipped)
        : undefined;
    // Before waiting for peers: a dead peer's lease must not hold back the
    // sweep that publishes the claims it left behind.
    const sweep = await this.sweep(now);
    const leased = own
      ? await this.evaluatePeerSlots(now, plan.due, own)
      : {counts: NOTHING_EVALUATED, byPeers: 0, takenOver: 0};
    if (own) this.evaluatedOwnSlot = own.mine.length + leased.takenOver > 0;
    const windowEnded = own ? await this.endWindows(plan.due) : 0;
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
      counts = sum(counts, await this.evaluate(now, expired, []));
      await finishSlotLeases(this.pool, expired, lease.holder);
      takenLater += expired.length;
      const isExpired = new Set(expired.map(slot => slot.getTime()));
      peers = peers.filter(slot => !isExpired.has(slot.getTime()));
    }
    this.lastEvaluated = due[due.length - 1];
    await this.saveLastSlot(this.lastEvaluated);
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
      await this.reportSkipped(
        candidates,
        skippedSlots,
        new SlotCalendars(loaded.calendars, skippedSlots),
      );
    }
    this.logCalendarProblems(loaded.problems);
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
    this.logInvalid(evaluation.invalid);
    const missed = await this.disableMissed(evaluation.missed);
    const late = this.lateActivations(window, slots[0], candidates, loaded);
    // The earlier minute first, as in a catch-up: the overlap check of the
    // later one leaves out runs this tick claimed for it.
    const due = [...late.due, ...evaluation.due];
    const claims = await claimRuns(this.pool, due, this.config.containerId);
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
   * Switches off one-time schedulers whose moment fell out of the catch-up
   * window unrun, with a reason the API shows; one re-armed meanwhile (another
   * date_time) is left alone.
   */
  private async disableMissed(missed: MissedOneTime[]): Promise<number> {
    if (missed.length === 0) return 0;
    const reason = `one-time run missed: its date_time is older than the catch-up window (${this.config.cronCatchUpMinutes} min)`;
    const {rows} = await this.pool.query<{id: number; date_time: Date}>(
      `UPDATE scheduler s SET status = false, status_reason = $3
         FROM unnest($1::int[], $2::timestamptz[]) AS m(id, date_time)
        -- JavaScript dates carry milliseconds; a stored date may carry micro.
        WHERE s.id = m.id AND s.status
          AND date_trunc('milliseconds', s.date_time) = m.date_time
        RETURNING s.id, s.date_time`,
      [
        missed.map(entry => entry.schedulerId),
        missed.map(entry => entry.dateTime),
        reason,
      ],
    );
    for (const row of rows) {
      this.logger.warn('One-time run missed (older than the catch-up window)', {
        scheduler_id: row.id,
        date_time: row.date_time.toISOString(),
        catch_up_minutes: this.config.cronCatchUpMinutes,
      });
    }
    return rows.length;
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

  private logCalendarProblems(
    problems: Array<{calendarId: number; problems: string[]}>,
  ): void {
    for (const entry of problems) {
      const key = `calendar:${entry.calendarId}:${entry.problems.join(';')}`;
      if (this.warnedInvalid.has(key)) continue;
      if (this.warnedInvalid.size >= WARNED_LIMIT) this.warnedInvalid.clear();
      this.warnedInvalid.add(key);
      this.logger.warn('Calendar entry unreadable: left out', {
        calendar_id: entry.calendarId,
        problems: entry.problems,
      });
    }
  }

  /** Once per scheduler and stored text: a bad row must not flood the log. */
  private logInvalid(invalid: InvalidRow[]): void {
    for (const entry of invalid) {
      const key = `${entry.schedulerId}:${entry.field}:${entry.value}`;
      if (this.warnedInvalid.has(key)) continue;
      if (this.warnedInvalid.size >= WARNED_LIMIT) this.warnedInvalid.clear();
      this.warnedInvalid.add(key);
      this.logger.warn(`Scheduler skipped: unreadable ${entry.field}`, {
        scheduler_id: entry.schedulerId,
        field: entry.field,
        [entry.field]: entry.value,
        problems: entry.problems,
      });
    }
  }

  /** Logs the missed runs and tells each owner once per outage. */
  private async reportSkipped(
    candidates: Parameters<typeof countDuePerScheduler>[0],
    skipped: Date[],
    calendars: SlotCalendars,
  ): Promise<void> {
    const counts = this.logSkipped(candidates, skipped, calendars);
    try {
      await noticeMissedRuns(
        this.pool,
        counts,
        skipped[0],
        skipped[skipped.length - 1],
      );
    } catch (error) {
      this.logger.error('Missed-runs notices failed', {
        error: (error as Error).message,
      });
    }
  }

  private logSkipped(
    candidates: Parameters<typeof countDuePerScheduler>[0],
    skipped: Date[],
    calendars: SlotCalendars,
  ): Map<number, number> {
    const counts = countDuePerScheduler(
      candidates,
      skipped,
      this.config.cronTimeZone,
      this.cache,
      calendars,
    );
    const from = skipped[0].toISOString();
    const to = skipped[skipped.length - 1].toISOString();
    for (const [schedulerId, runs] of counts) {
      this.logger.warn(
        'Missed runs not fired (older than the catch-up window)',
        {
          scheduler_id: schedulerId,
          skipped_runs: runs,
          from,
          to,
        },
      );
    }
    this.logger.warn('Slots skipped after downtime', {
      slots: skipped.length,
      schedulers: counts.size,
      from,
      to,
    });
    return counts;
  }

  /** The newest slot any instance evaluated: tells downtime from a late tick. */
  private async sharedLastSlot(): Promise<Date | undefined> {
    const {rows} = await this.pool.query<{last_slot: Date | null}>(
      `SELECT last_slot FROM producer_state WHERE name = 'ticks'`,
    );
    return rows[0]?.last_slot ?? undefined;
  }

  private async saveLastSlot(slot: Date): Promise<void> {
    await this.pool.query(
      `INSERT INTO producer_state (name, last_slot) VALUES ('ticks', $1)
       ON CONFLICT (name) DO UPDATE
         SET last_slot = GREATEST(producer_state.last_slot, EXCLUDED.last_slot),
             updated_at = now()`,
      [slot],
    );
  }
}
