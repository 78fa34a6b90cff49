import {
  ChangeDetectionStrategy,
  Component,
  DestroyRef,
  computed,
  inject,
  signal,
} from '@angular/core';
import {RouterLink} from '@angular/router';
import type {NextRuns} from '@client/models/next-runs';
import type {Scheduler} from '@client/models/scheduler';
import type {SchedulerExecution} from '@client/models/scheduler-execution';
import {SchedulerExecutionService} from '@client/services/scheduler-execution.service';
import {SchedulerService} from '@client/services/scheduler.service';
import {firstValueFrom} from 'rxjs';
import {SessionService} from '../auth/session.service';
import {errorMessage} from '../shared/api-error';
import {pollWhileVisible} from '../shared/polling';
import {PagerComponent} from '../shared/pager.component';
import {ZonedTimeComponent} from '../shared/zoned-time.component';
import {TaskKind, taskLabel} from './scheduler-kind';
import {inBackground} from '../shared/in-background';

const PAGE_SIZE = 50;
type BulkAction = 'pause' | 'resume' | 'run';

@Component({
  selector: 'app-scheduler-list',
  changeDetection: ChangeDetectionStrategy.OnPush,
  imports: [RouterLink, ZonedTimeComponent, PagerComponent],
  template: `
    <h1>Schedulers</h1>
    <div class="toolbar" role="search">
      <div class="field">
        <label for="search">Search</label>
        <input
          id="search"
          type="search"
          placeholder="description or params"
          [value]="query()"
          (input)="setQuery($any($event.target).value)"
        />
      </div>
      <div class="field">
        <label for="kind">Kind</label>
        <select id="kind" (change)="setKind($any($event.target).value)">
          <option value="">All kinds</option>
          <option value="report">Report</option>
          <option value="worker">Worker</option>
          <option value="reminder">Reminder</option>
        </select>
      </div>
      <div class="field">
        <label for="state">State</label>
        <select id="state" (change)="setState($any($event.target).value)">
          <option value="">Active and paused</option>
          <option value="active">Active</option>
          <option value="paused">Paused</option>
        </select>
      </div>
      @if (session.canWrite()) {
        <div class="field">
          <label for="reason">Reason (optional)</label>
          <input
            id="reason"
            type="text"
            maxlength="500"
            placeholder="why: kept in the audit log"
            [value]="reason()"
            (input)="reason.set($any($event.target).value)"
          />
        </div>
        <a class="button" routerLink="/schedulers/new">New scheduler</a>
      }
    </div>
    @if (session.canWrite() && selected().size > 0) {
      <div class="toolbar" role="group" aria-label="Bulk actions">
        <span>{{ selected().size }} selected</span>
        <button type="button" (click)="bulk('pause')">Pause selected</button>
        <button type="button" (click)="bulk('resume')">Resume selected</button>
        <button type="button" (click)="bulk('run')">Run selected now</button>
      </div>
    }
    @if (message(); as text) {
      <p class="notice" role="status">{{ text }}</p>
    }
    @if (error(); as text) {
      <p class="error" role="alert">{{ text }}</p>
    }
    <div class="table-wrap">
      <table>
        <caption class="sr-only">
          Schedulers
        </caption>
        <thead>
          <tr>
            @if (session.canWrite()) {
              <th scope="col">
                <input
                  type="checkbox"
                  aria-label="Select all shown"
                  [checked]="allSelected()"
                  (change)="selectAll($any($event.target).checked)"
                />
              </th>
            }
            <th scope="col">Description</th>
            <th scope="col">Task</th>
            <th scope="col">Schedule</th>
            <th scope="col">Next run</th>
            <th scope="col">Last run</th>
            <th scope="col">State</th>
            @if (session.canWrite()) {
              <th scope="col">Actions</th>
            }
          </tr>
        </thead>
        <tbody>
          @for (row of schedulers(); track row.id) {
            <tr>
              @if (session.canWrite()) {
                <td>
                  <input
                    type="checkbox"
                    [attr.aria-label]="'Select ' + row.description"
                    [checked]="selected().has(row.id!)"
                    (change)="toggle(row.id!, $any($event.target).checked)"
                  />
                </td>
              }
              <td>
                <a [routerLink]="['/schedulers', row.id]">{{
                  row.description
                }}</a>
              </td>
              <td>{{ task(row) }}</td>
              <td>
                @if (timing()[row.id!]; as t) {
                  <span>{{ t.description }}</span>
                  <span class="muted"> ({{ t.timezone }})</span>
                } @else {
                  <span>{{
                    row.schedule ?? row.date_time ?? 'stay-alive'
                  }}</span>
                }
                @if (row.schedule) {
                  <br /><code>{{ row.schedule }}</code>
                }
              </td>
              <td>
                <app-time
                  [at]="timing()[row.id!]?.runs?.[0]"
                  [zone]="timing()[row.id!]?.timezone"
                />
              </td>
              <td>
                @if (lastRuns()[row.id!]; as run) {
                  <span [class]="'status-' + run.status">{{ run.status }}</span>
                  <br />
                  <app-time
                    [at]="run.finished_at ?? run.started_at ?? run.executed_at"
                    [zone]="row.timezone"
                  />
                } @else {
                  <span class="muted">never</span>
                }
              </td>
              <td>
                <span [class]="row.status ? 'state-active' : 'state-paused'">{{
                  row.status ? 'Active' : 'Paused'
                }}</span>
              </td>
              @if (session.canWrite()) {
                <td class="actions">
                  @if (!row.stay_alive) {
                    <button
                      type="button"
                      [attr.aria-label]="'Run now: ' + row.description"
                      (click)="runNow(row)"
                    >
                      Run now
                    </button>
                  }
                  @if (row.status) {
                    <button
                      type="button"
                      class="secondary"
                      [attr.aria-label]="'Pause: ' + row.description"
                      (click)="setActive(row, false)"
                    >
                      Pause
                    </button>
                  } @else {
                    <button
                      type="button"
                      class="secondary"
                      [attr.aria-label]="'Resume: ' + row.description"
                      (click)="setActive(row, true)"
                    >
                      Resume
                    </button>
                  }
                </td>
              }
            </tr>
          } @empty {
            <tr>
              <td colspan="8" class="muted">No schedulers match.</td>
            </tr>
          }
        </tbody>
      </table>
    </div>
    <app-pager
      [page]="page()"
      [hasMore]="schedulers().length >= pageSize"
      (pageChange)="goTo($event)"
    />
  `,
})
export class SchedulerListComponent {
  protected readonly session = inject(SessionService);
  private readonly api = inject(SchedulerService);
  private readonly executions = inject(SchedulerExecutionService);
  protected readonly pageSize = PAGE_SIZE;

  protected readonly schedulers = signal<Scheduler[]>([]);
  protected readonly timing = signal<Partial<Record<number, NextRuns>>>({});
  protected readonly lastRuns = signal<
    Partial<Record<number, SchedulerExecution>>
  >({});
  protected readonly query = signal('');
  protected readonly kind = signal<TaskKind | ''>('');
  protected readonly state = signal<'active' | 'paused' | ''>('');
  protected readonly page = signal(0);
  protected readonly reason = signal('');
  protected readonly selected = signal(new Set<number>());
  protected readonly message = signal<string | null>(null);
  protected readonly error = signal<string | null>(null);
  protected readonly allSelected = computed(
    () =>
      this.schedulers().length > 0 &&
      this.schedulers().every(row => this.selected().has(row.id!)),
  );
  /** Next runs are asked once per scheduler version, not on every poll. */
  private readonly timingVersion = new Map<number, string>();
  private searchTimer: ReturnType<typeof setTimeout> | undefined;

  constructor() {
    inBackground(this.load());
    pollWhileVisible(inject(DestroyRef), () => inBackground(this.load()));
  }

  protected task(row: Scheduler): string {
    return taskLabel(row);
  }

  protected setQuery(value: string): void {
    this.query.set(value);
    clearTimeout(this.searchTimer);
    this.searchTimer = setTimeout(() => this.goTo(0), 250);
  }

  protected setKind(value: string): void {
    this.kind.set(value as TaskKind | '');
    this.goTo(0);
  }

  protected setState(value: string): void {
    this.state.set(value as 'active' | 'paused' | '');
    this.goTo(0);
  }

  protected goTo(page: number): void {
    this.page.set(Math.max(0, page));
    this.selected.set(new Set());
    inBackground(this.load());
  }

  protected toggle(id: number, on: boolean): void {
    const next = new Set(this.selected());
    if (on) next.add(id);
    else next.delete(id);
    this.selected.set(next);
  }

  protected selectAll(on: boolean): void {
    this.selected.set(new Set(on ? this.schedulers().map(row => row.id!) : []));
  }

  protected async runNow(row: Scheduler): Promise<void> {
    await this.act(async () => {
      const result = await firstValueFrom(
        this.api.run({id: row.id!, body: this.reasonBody()}),
      );
      return `Run of “${row.description}” started (run #${result.execution_id}, ${result.status}).`;
    });
  }

  protected async setActive(row: Scheduler, active: boolean): Promise<void> {
    await this.act(async () => {
      const action = active ? 'resume' : 'pause';
      const answer = await firstValueFrom(
        this.api.bulk({body: {action, ids: [row.id!], ...this.reasonBody()}}),
      );
      const [item] = answer.results;
      if (item && item.status >= 400) {
        throw new Error(`${row.description}: ${item.error ?? item.status}`);
      }
      return `“${row.description}” ${active ? 'resumed' : 'paused'}.`;
    });
  }

  protected async bulk(action: BulkAction): Promise<void> {
    const ids = [...this.selected()];
    await this.act(async () => {
      const answer = await firstValueFrom(
        this.api.bulk({body: {action, ids, ...this.reasonBody()}}),
      );
      const failed = answer.results.filter(item => item.status >= 400);
      const done = answer.results.length - failed.length;
      const verb = {pause: 'Paused', resume: 'Resumed', run: 'Started'}[action];
      const problems = failed
        .map(item => `#${item.id}: ${item.error ?? item.status}`)
        .join('; ');
      this.selected.set(new Set());
      return `${verb} ${done} of ${answer.results.length}.${problems ? ` Not done: ${problems}` : ''}`;
    });
  }

  private reasonBody(): {reason?: string} {
    const reason = this.reason().trim();
    return reason ? {reason} : {};
  }

  private async act(work: () => Promise<string>): Promise<void> {
    this.error.set(null);
    this.message.set(null);
    try {
      this.message.set(await work());
    } catch (error) {
      this.error.set(errorMessage(error));
    }
    await this.load();
  }

  private where(): Record<string, unknown> {
    const where: Record<string, unknown> = {};
    const kind = this.kind();
    if (kind) where[`${kind}_id`] = {neq: null};
    if (this.state()) where['status'] = this.state() === 'active';
    return where;
  }

  private async load(): Promise<void> {
    try {
      const q = this.query().trim();
      const rows = await firstValueFrom(
        this.api.find({
          filter: {
            where: this.where(),
            order: ['id DESC'],
            limit: PAGE_SIZE,
            skip: this.page() * PAGE_SIZE,
          },
          ...(q ? {q} : {}),
        }),
      );
      this.schedulers.set(rows);
      this.error.set(null);
      await Promise.all([this.loadTiming(rows), this.loadLastRuns(rows)]);
    } catch (error) {
      this.error.set(errorMessage(error));
    }
  }

  private async loadTiming(rows: Scheduler[]): Promise<void> {
    const stale = rows.filter(
      row => this.timingVersion.get(row.id!) !== this.versionOf(row),
    );
    const answers = await Promise.all(
      stale.map(row =>
        firstValueFrom(this.api.nextRuns({id: row.id!, count: 1})).then(
          timing => [row, timing] as const,
          () => undefined,
        ),
      ),
    );
    const next = {...this.timing()};
    for (const answer of answers) {
      if (!answer) continue;
      next[answer[0].id!] = answer[1];
      this.timingVersion.set(answer[0].id!, this.versionOf(answer[0]));
    }
    this.timing.set(next);
  }

  /** A run moves on once it fires, so the minute is part of the version. */
  private versionOf(row: Scheduler): string {
    return `${row.updated_at}|${new Date().toISOString().slice(0, 16)}`;
  }

  private async loadLastRuns(rows: Scheduler[]): Promise<void> {
    if (rows.length === 0) return;
    const runs = await firstValueFrom(
      this.executions.find({
        filter: {
          where: {scheduler_id: {inq: rows.map(row => row.id!)}},
          order: ['id DESC'],
          limit: 1000,
        },
      }),
    );
    const last: Partial<Record<number, SchedulerExecution>> = {};
    for (const run of runs) last[run.scheduler_id] ??= run;
    this.lastRuns.set(last);
  }
}
