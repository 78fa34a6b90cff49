import type {Pool, PoolClient} from 'pg';
import type {Logger} from '../logging/logger';
import {cutError, digestDue, NoticeState, onFailure} from './notice-policy';

export interface NotifySettings {
  on_failure?: boolean;
  on_recovery?: boolean;
  email?: boolean;
  group?: boolean;
}

interface Parked {
  failed_task_id: string;
  scheduler_id: number;
  description: string;
  notify: NotifySettings;
  slot: Date | null;
  execution_key: string | null;
  retry_count: number;
  failed_reason: string;
  failed_at: Date;
}

interface StateRow {
  scheduler_id: number;
  description: string;
  notify: NotifySettings;
  last_notice_at: Date | null;
  unreported: number;
  failing: boolean;
}

export interface DispatchReport {
  failure: number;
  digest: number;
  recovery: number;
}

const toState = (row: {
  last_notice_at: Date | null;
  unreported: number;
  failing: boolean;
}): NoticeState => ({
  lastNoticeAt: row.last_notice_at,
  unreported: row.unreported,
  failing: row.failing,
});

/**
 * Turns parked runs into their owners' web notifications: at most one
 * failure notice per scheduler per interval, then a digest with the count,
 * and one recovery notice after the first success. Each pass is one
 * transaction: the notices and the outbox rows they handle commit together,
 * so a notice is delivered once, whenever the process dies. Time is an
 * argument (`now`): the caller's clock.
 */
export class FailureNotices {
  constructor(
    private readonly pool: Pool,
    private readonly intervalMs: number,
    private readonly logger: Logger,
  ) {}

  async dispatch(now: Date): Promise<DispatchReport> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const report = {failure: 0, digest: 0, recovery: 0};
      await this.failures(client, now, report);
      await this.digests(client, now, report);
      await this.recoveries(client, report);
      await client.query('COMMIT');
      if (report.failure + report.digest + report.recovery > 0) {
        this.logger.info('Failure notices sent', {...report});
      }
      return report;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  private async failures(
    client: PoolClient,
    now: Date,
    report: DispatchReport,
  ): Promise<void> {
    const {rows} = await client.query<Parked>(
      `SELECT o.failed_task_id, o.scheduler_id, s.description, s.notify,
              e.slot, e.execution_key, f.retry_count, f.failed_reason, f.failed_at
         FROM failure_notice_outbox o
         JOIN failed_task f ON f.id = o.failed_task_id
         JOIN scheduler s ON s.id = o.scheduler_id
         LEFT JOIN scheduler_execution e ON e.id = f.execution_id
        WHERE o.handled_at IS NULL
        ORDER BY o.failed_task_id
        LIMIT 1000
        FOR UPDATE OF o SKIP LOCKED`,
    );
    for (const parked of rows) {
      const state = await this.lockState(client, parked.scheduler_id);
      const next = onFailure(state, now, this.intervalMs);
      const tell = parked.notify.on_failure !== false;
      if (tell && next.decision.send === 'failure') {
        await this.notify(client, parked.scheduler_id, parked.notify, {
          title: `Scheduler ${parked.scheduler_id} failed: ${parked.description}`,
          body:
            `The run of ${parked.slot?.toISOString() ?? 'a manual trigger'} failed after ` +
            `${parked.retry_count + 1} attempt(s): ${cutError(parked.failed_reason)}. ` +
            `Re-drive it as failed task ${parked.failed_task_id}.` +
            (next.decision.alsoFailed > 0
              ? ` ${next.decision.alsoFailed} more run(s) failed since the last notice.`
              : ''),
          payload: {
            kind: 'failure',
            scheduler_id: parked.scheduler_id,
            slot: parked.slot,
            execution_key: parked.execution_key,
            attempts: parked.retry_count + 1,
            last_error: cutError(parked.failed_reason),
            failed_task_id: Number(parked.failed_task_id),
            also_failed: next.decision.alsoFailed,
          },
        });
        report.failure++;
      }
      await this.saveState(
        client,
        parked.scheduler_id,
        tell ? next.state : {...state, unreported: state.unreported},
        parked.failed_at,
      );
      await client.query(
        `UPDATE failure_notice_outbox SET handled_at = $2 WHERE failed_task_id = $1`,
        [parked.failed_task_id, now],
      );
    }
  }

  private async digests(
    client: PoolClient,
    now: Date,
    report: DispatchReport,
  ): Promise<void> {
    const rows = await this.lockedStates(client, 'unreported > 0');
    for (const row of rows) {
      const state = toState(row);
      if (!digestDue(state, now, this.intervalMs)) continue;
      await this.notify(client, row.scheduler_id, row.notify, {
        title: `Scheduler ${row.scheduler_id}: ${row.unreported} more failed run(s)`,
        body: `${row.unreported} more run(s) of "${row.description}" failed since the notice of ${state.lastNoticeAt!.toISOString()}.`,
        payload: {
          kind: 'digest',
          scheduler_id: row.scheduler_id,
          failed_runs: row.unreported,
        },
      });
      report.digest++;
      await this.saveState(client, row.scheduler_id, {
        ...state,
        lastNoticeAt: now,
        unreported: 0,
      });
    }
  }

  private async recoveries(
    client: PoolClient,
    report: DispatchReport,
  ): Promise<void> {
    const rows = await this.lockedStates(
      client,
      `failing AND EXISTS (
         SELECT 1 FROM scheduler_execution e
          WHERE e.scheduler_id = st.scheduler_id AND e.status = 'succeeded'
            AND e.finished_at > st.last_failure_at)`,
    );
    for (const row of rows) {
      if (row.notify.on_recovery !== false) {
        await this.notify(client, row.scheduler_id, row.notify, {
          title: `Scheduler ${row.scheduler_id} recovered: ${row.description}`,
          body: `A run of "${row.description}" succeeded again after failing.`,
          payload: {kind: 'recovery', scheduler_id: row.scheduler_id},
        });
        report.recovery++;
      }
      await this.saveState(client, row.scheduler_id, {
        lastNoticeAt: row.last_notice_at,
        unreported: 0,
        failing: false,
      });
    }
  }

  private async lockState(
    client: PoolClient,
    schedulerId: number,
  ): Promise<NoticeState> {
    await client.query(
      `INSERT INTO failure_notice_state (scheduler_id) VALUES ($1)
       ON CONFLICT (scheduler_id) DO NOTHING`,
      [schedulerId],
    );
    const {rows} = await client.query(
      `SELECT last_notice_at, unreported, failing FROM failure_notice_state
        WHERE scheduler_id = $1 FOR UPDATE`,
      [schedulerId],
    );
    return toState(rows[0]);
  }

  private async lockedStates(
    client: PoolClient,
    condition: string,
  ): Promise<StateRow[]> {
    const {rows} = await client.query<StateRow>(
      `SELECT st.scheduler_id, s.description, s.notify, st.last_notice_at,
              st.unreported, st.failing
         FROM failure_notice_state st JOIN scheduler s ON s.id = st.scheduler_id
        WHERE ${condition}
        ORDER BY st.scheduler_id
        FOR UPDATE OF st SKIP LOCKED`,
    );
    return rows;
  }

  private async saveState(
    client: PoolClient,
    schedulerId: number,
    state: NoticeState,
    failedAt?: Date,
  ): Promise<void> {
    await client.query(
      `UPDATE failure_notice_state
          SET last_notice_at = $2, unreported = $3, failing = $4,
              last_failure_at = GREATEST(last_failure_at, $5)
        WHERE scheduler_id = $1`,
      [
        schedulerId,
        state.lastNoticeAt,
        state.unreported,
        state.failing,
        failedAt ?? null,
      ],
    );
  }

  /**
   * A web notification to the owner and, with notify.group, the scheduler's
   * group; with notify.email, an e-mail copy of each in the mail outbox, in
   * the same statement (NoticeMailSender sends it).
   */
  private async notify(
    client: PoolClient,
    schedulerId: number,
    settings: NotifySettings,
    notice: {title: string; body: string; payload: object},
  ): Promise<void> {
    await client.query(
      `WITH told AS (
         INSERT INTO notification (user_id, title, body, payload)
         SELECT DISTINCT u.id, $2, $3, $4::jsonb
           FROM scheduler s
           JOIN app_user u ON u.active
            AND (u.id = s.user_id OR ($5 AND s.group_id IS NOT NULL AND u.group_id = s.group_id))
          WHERE s.id = $1
         RETURNING id
       )
       INSERT INTO notice_mail_outbox (notification_id)
       SELECT id FROM told WHERE $6`,
      [
        schedulerId,
        notice.title,
        notice.body,
        JSON.stringify(notice.payload),
        settings.group === true,
        settings.email === true,
      ],
    );
  }
}
