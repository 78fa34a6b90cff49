import {
  ChangeDetectionStrategy,
  Component,
  DestroyRef,
  OnInit,
  inject,
  input,
  signal,
} from '@angular/core';
import {RouterLink} from '@angular/router';
import type {AuditEvent} from '@client/models/audit-event';
import type {Calendar} from '@client/models/calendar';
import type {BackfillPlan} from '@client/models/backfill-plan';
import type {NextRuns} from '@client/models/next-runs';
import type {Scheduler} from '@client/models/scheduler';
import type {SchedulerExecution} from '@client/models/scheduler-execution';
import {AuditEventService} from '@client/services/audit-event.service';
import {CalendarService} from '@client/services/calendar.service';
import {SchedulerService} from '@client/services/scheduler.service';
import {firstValueFrom} from 'rxjs';
import {SessionService} from '../auth/session.service';
import {errorMessage} from '../shared/api-error';
import {pollWhileVisible} from '../shared/polling';
import {viewerZone, wallClockToIso} from '../shared/time-zones';
import {PagerComponent} from '../shared/pager.component';
import {ZonedTimeComponent} from '../shared/zoned-time.component';
import {RunChartComponent} from './run-chart.component';
import {taskLabel} from './scheduler-kind';
import {inBackground} from '../shared/in-background';

const RUNS_PAGE = 20;
type RunStatus = NonNullable<
  Parameters<SchedulerService['findExecutions']>[0]['status']
>;
type RunTrigger = NonNullable<
  Parameters<SchedulerService['findExecutions']>[0]['trigger']
>;

@Component({
  selector: 'app-scheduler-detail',
  changeDetection: ChangeDetectionStrategy.OnPush,
  imports: [RouterLink, ZonedTimeComponent, RunChartComponent, PagerComponent],
  template: `
    @if (scheduler(); as s) {
      <h1>{{ s.description }}</h1>
      <p>
        {{ task(s) }} ·
        <span [class]="s.status ? 'state-active' : 'state-paused'">{{
          s.status ? 'Active' : 'Paused'
        }}</span>
        @if (s.status_reason) {
          <span class="muted">({{ s.status_reason }})</span>
        }
        @if (next(); as n) {
          · {{ n.description }} ({{ n.timezone }})
        }
        @if (s.schedule) {
          · <code>{{ s.schedule }}</code>
        }
      </p>
      @if (session.canWrite()) {
        <div class="toolbar">
          <div class="field">
            <label for="reason">Reason (optional)</label>
            <input
              id="reason"
              maxlength="500"
              [value]="reason()"
              (input)="reason.set($any($event.target).value)"
            />
          </div>
          @if (!s.stay_alive) {
            <button type="button" (click)="runNow()">Run now</button>
          }
          <button
            type="button"
            class="secondary"
            (click)="setActive(!s.status)"
          >
            {{ s.status ? 'Pause' : 'Resume' }}
          </button>
          <a
            class="button secondary"
            [routerLink]="['/schedulers', s.id, 'edit']"
            >Edit</a
          >
        </div>
      }
    } @else {
      <h1>Scheduler {{ id() }}</h1>
    }
    @if (message(); as text) {
      <p class="notice" role="status">{{ text }}</p>
    }
    @if (error(); as text) {
      <p class="error" role="alert">{{ text }}</p>
    }

    <div class="cards">
      <section aria-labelledby="calendars-heading">
        <h2 id="calendars-heading">Calendars and window</h2>
        <ul>
          @for (calendar of calendars(); track calendar.id) {
            <li>
              <a routerLink="/calendars">{{ calendar.name }}</a>
              ({{ calendar.kind }}, {{ calendar.time_zone }})
            </li>
          } @empty {
            <li class="muted">No calendars: every fire runs.</li>
          }
        </ul>
        <p data-testid="active-window">
          Active window:
          @if (scheduler()?.starts_at || scheduler()?.ends_at) {
            @if (scheduler()?.starts_at; as from) {
              from <app-time [at]="from" [zone]="scheduler()?.timezone" />
            } @else {
              from the start
            }
            @if (scheduler()?.ends_at; as until) {
              until <app-time [at]="until" [zone]="scheduler()?.timezone" />
            } @else {
              with no end
            }
          } @else {
            always
          }
        </p>
      </section>
      <section aria-labelledby="next-heading">
        <h2 id="next-heading">Next 10 runs</h2>
        <ol>
          @for (run of next()?.runs ?? []; track run) {
            <li><app-time [at]="run" [zone]="next()?.timezone" /></li>
          } @empty {
            <li class="muted">
              {{
                next()?.active === false
                  ? 'Paused: no runs ahead.'
                  : 'No runs ahead.'
              }}
            </li>
          }
        </ol>
        @if (next()?.skipped?.length) {
          <h3>Skipped by a calendar</h3>
          <ul data-testid="upcoming-skips">
            @for (skip of next()?.skipped ?? []; track skip.at) {
              <li>
                <app-time [at]="skip.at" [zone]="next()?.timezone" /> ·
                {{ skip.calendar_name }}
              </li>
            }
          </ul>
        }
      </section>
      <section aria-labelledby="chart-heading">
        <h2 id="chart-heading">Recent runs</h2>
        <app-run-chart [runs]="recent()" />
      </section>
    </div>

    <section aria-labelledby="runs-heading">
      <h2 id="runs-heading">Runs</h2>
      <div class="toolbar">
        <div class="field">
          <label for="run-status">Status</label>
          <select
            id="run-status"
            (change)="setStatus($any($event.target).value)"
          >
            <option value="">Any status</option>
            @for (status of statuses; track status) {
              <option [value]="status">{{ status }}</option>
            }
          </select>
        </div>
        <div class="field">
          <label for="run-trigger">Trigger</label>
          <select
            id="run-trigger"
            (change)="setTrigger($any($event.target).value)"
          >
            <option value="">Any trigger</option>
            @for (trigger of triggers; track trigger) {
              <option [value]="trigger">{{ trigger }}</option>
            }
          </select>
        </div>
      </div>
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th scope="col">Run</th>
              <th scope="col">Status</th>
              <th scope="col">Trigger</th>
              <th scope="col">Attempts</th>
              <th scope="col">Started</th>
              <th scope="col">Duration</th>
              <th scope="col">Last error</th>
            </tr>
          </thead>
          <tbody>
            @for (run of runs(); track run.id) {
              <tr>
                <td>#{{ run.id }}</td>
                <td>
                  <span [class]="'status-' + run.status">{{ run.status }}</span>
                </td>
                <td>{{ run.trigger }}</td>
                <td>{{ run.attempts ?? 0 }}</td>
                <td>
                  <app-time
                    [at]="run.started_at ?? run.executed_at"
                    [zone]="scheduler()?.timezone"
                  />
                </td>
                <td>
                  {{ run.duration_ms == null ? '–' : run.duration_ms + ' ms' }}
                </td>
                <td>{{ run.last_error ?? run.status_reason ?? '' }}</td>
              </tr>
            } @empty {
              <tr>
                <td colspan="7" class="muted">No runs.</td>
              </tr>
            }
          </tbody>
        </table>
      </div>
      <app-pager
        [page]="runPage()"
        [hasMore]="runs().length >= runsPage"
        previousLabel="Newer runs"
        nextLabel="Older runs"
        (pageChange)="goTo($event)"
      />
    </section>

    <section aria-labelledby="skipped-heading">
      <h2 id="skipped-heading">Skipped runs</h2>
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th scope="col">Slot</th>
              <th scope="col">Why</th>
            </tr>
          </thead>
          <tbody>
            @for (run of skipped(); track run.id) {
              <tr>
                <td>
                  <app-time
                    [at]="run.slot ?? run.executed_at"
                    [zone]="scheduler()?.timezone"
                  />
                </td>
                <td>{{ run.status_reason ?? '' }}</td>
              </tr>
            } @empty {
              <tr>
                <td colspan="2" class="muted">No skipped runs.</td>
              </tr>
            }
          </tbody>
        </table>
      </div>
    </section>

    @if (session.canWrite() && scheduler()?.schedule) {
      <section aria-labelledby="backfill-heading" class="panel">
        <h2 id="backfill-heading">Backfill</h2>
        <p class="muted">
          Runs the slots this schedule had between two moments (your time); a
          slot that already ran is not run again.
        </p>
        <div class="toolbar">
          <div class="field">
            <label for="backfill-from">From</label>
            <input id="backfill-from" type="datetime-local" #from />
          </div>
          <div class="field">
            <label for="backfill-to">To</label>
            <input id="backfill-to" type="datetime-local" #to />
          </div>
          <button
            type="button"
            class="secondary"
            (click)="previewBackfill(from.value, to.value)"
          >
            Preview backfill
          </button>
        </div>
        @if (plan(); as p) {
          <p>
            {{ p.count ?? 0 }} slot(s) would run{{ p.count ? ', first ' : '' }}
            @if (p.slots?.length) {
              <app-time [at]="p.slots?.[0]" [zone]="scheduler()?.timezone" />
            }
          </p>
          <button
            type="button"
            [disabled]="!p.count"
            (click)="confirmBackfill()"
          >
            Confirm backfill of {{ p.count }} slot(s)
          </button>
        }
      </section>
    }

    <section aria-labelledby="audit-heading">
      <h2 id="audit-heading">Audit events</h2>
      @if (session.canWrite()) {
        <ul>
          @for (event of audit(); track event.id) {
            <li>
              <app-time [at]="event.at" /> · user #{{ event.actor_user_id }} ·
              {{ event.action }}
              @if (event.reason) {
                · “{{ event.reason }}”
              }
            </li>
          } @empty {
            <li class="muted">No audit events.</li>
          }
        </ul>
      } @else {
        <p class="muted">Audit events are shown to operators and admins.</p>
      }
    </section>
  `,
})
export class SchedulerDetailComponent implements OnInit {
  readonly id = input.required<string>();
  protected readonly session = inject(SessionService);
  private readonly api = inject(SchedulerService);
  private readonly auditApi = inject(AuditEventService);
  private readonly calendarApi = inject(CalendarService);
  private readonly destroyRef = inject(DestroyRef);
  protected readonly runsPage = RUNS_PAGE;
  protected readonly statuses: RunStatus[] = [
    'claimed',
    'published',
    'running',
    'retrying',
    'succeeded',
    'failed',
    'skipped',
  ];
  protected readonly triggers: RunTrigger[] = [
    'schedule',
    'manual',
    'backfill',
    'redrive',
  ];

  protected readonly scheduler = signal<Scheduler | null>(null);
  protected readonly next = signal<NextRuns | null>(null);
  protected readonly runs = signal<
    Array<SchedulerExecution & {trigger?: string}>
  >([]);
  protected readonly recent = signal<SchedulerExecution[]>([]);
  protected readonly skipped = signal<SchedulerExecution[]>([]);
  protected readonly calendars = signal<Calendar[]>([]);
  protected readonly audit = signal<AuditEvent[]>([]);
  protected readonly plan = signal<BackfillPlan | null>(null);
  protected readonly status = signal<RunStatus | ''>('');
  protected readonly trigger = signal<RunTrigger | ''>('');
  protected readonly runPage = signal(0);
  protected readonly reason = signal('');
  protected readonly message = signal<string | null>(null);
  protected readonly error = signal<string | null>(null);
  private backfillRange: {from: string; to: string} | null = null;

  ngOnInit(): void {
    inBackground(this.load());
    pollWhileVisible(this.destroyRef, () => inBackground(this.load()));
  }

  private get schedulerId(): number {
    return Number(this.id());
  }

  protected task(s: Scheduler): string {
    return taskLabel(s);
  }

  protected setStatus(value: string): void {
    this.status.set(value as RunStatus | '');
    this.goTo(0);
  }

  protected setTrigger(value: string): void {
    this.trigger.set(value as RunTrigger | '');
    this.goTo(0);
  }

  protected goTo(page: number): void {
    this.runPage.set(Math.max(0, page));
    inBackground(this.load());
  }

  protected async runNow(): Promise<void> {
    await this.act(async () => {
      const result = await firstValueFrom(
        this.api.run({id: this.schedulerId, body: this.reasonBody()}),
      );
      return `Run #${result.execution_id} started (${result.status}).`;
    });
  }

  protected async setActive(active: boolean): Promise<void> {
    await this.act(async () => {
      const answer = await firstValueFrom(
        this.api.bulk({
          body: {
            action: active ? 'resume' : 'pause',
            ids: [this.schedulerId],
            ...this.reasonBody(),
          },
        }),
      );
      const [item] = answer.results;
      if (item && item.status >= 400)
        throw new Error(item.error ?? String(item.status));
      return active ? 'Resumed.' : 'Paused.';
    });
  }

  protected async previewBackfill(
    fromLocal: string,
    toLocal: string,
  ): Promise<void> {
    const from = wallClockToIso(fromLocal, viewerZone());
    const to = wallClockToIso(toLocal, viewerZone());
    this.plan.set(null);
    if (!from || !to) {
      this.error.set('Give both moments of the backfill range.');
      return;
    }
    await this.act(async () => {
      const plan = await firstValueFrom(
        this.api.backfill({
          id: this.schedulerId,
          body: {from, to, dry_run: true},
        }),
      );
      this.backfillRange = {from, to};
      this.plan.set(plan as BackfillPlan);
      return `Dry run: ${(plan as BackfillPlan).count} slot(s). Confirm to run them.`;
    });
  }

  protected async confirmBackfill(): Promise<void> {
    const range = this.backfillRange;
    if (!range) return;
    await this.act(async () => {
      const result = (await firstValueFrom(
        this.api.backfill({
          id: this.schedulerId,
          body: {...range, dry_run: false, ...this.reasonBody()},
        }),
      )) as unknown as {
        claimed: number;
        already_claimed: number;
        published: number;
      };
      this.plan.set(null);
      return `Backfill: ${result.claimed} claimed, ${result.already_claimed} had already run, ${result.published} published.`;
    });
  }

  private reasonBody(): {reason?: string} {
    const reason = this.reason().trim();
    return reason ? {reason} : {};
  }

  private async act(work: () => Promise<string>): Promise<void> {
    this.message.set(null);
    this.error.set(null);
    try {
      this.message.set(await work());
    } catch (error) {
      this.error.set(errorMessage(error));
    }
    await this.load();
  }

  private async load(): Promise<void> {
    const id = this.schedulerId;
    try {
      const [scheduler, next, runs, recent, skipped] = await Promise.all([
        firstValueFrom(this.api.findById({id})),
        firstValueFrom(this.api.nextRuns({id, count: 10})),
        firstValueFrom(
          this.api.findExecutions({
            id,
            limit: RUNS_PAGE,
            skip: this.runPage() * RUNS_PAGE,
            ...(this.status() ? {status: this.status() as RunStatus} : {}),
            ...(this.trigger() ? {trigger: this.trigger() as RunTrigger} : {}),
          }),
        ),
        firstValueFrom(this.api.findExecutions({id, limit: 30})),
        firstValueFrom(
          this.api.findExecutions({id, status: 'skipped', limit: 20}),
        ),
      ]);
      this.scheduler.set(scheduler);
      this.next.set(next);
      this.runs.set(runs);
      this.recent.set(recent);
      this.skipped.set(skipped);
      const calendarIds = scheduler.calendar_ids ?? [];
      this.calendars.set(
        calendarIds.length === 0
          ? []
          : await firstValueFrom(
              this.calendarApi.find({
                filter: {where: {id: {inq: calendarIds}}, order: ['name ASC']},
              }),
            ),
      );
      if (this.session.canWrite()) {
        this.audit.set(
          await firstValueFrom(
            this.auditApi.find({
              filter: {
                where: {entity: 'scheduler', entity_id: String(id)},
                order: ['id DESC'],
                limit: 20,
              },
            }),
          ),
        );
      }
    } catch (error) {
      this.error.set(errorMessage(error));
    }
  }
}
