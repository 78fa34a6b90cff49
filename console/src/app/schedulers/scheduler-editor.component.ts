import {
  ChangeDetectionStrategy,
  Component,
  DestroyRef,
  OnInit,
  computed,
  inject,
  input,
  signal,
} from '@angular/core';
import {Router, RouterLink} from '@angular/router';
import type {Calendar} from '@client/models/calendar';
import type {Scheduler} from '@client/models/scheduler';
import type {SchedulePreview} from '@client/models/schedule-preview';
import {CalendarService} from '@client/services/calendar.service';
import {ReminderService} from '@client/services/reminder.service';
import {ReportService} from '@client/services/report.service';
import {SchedulerService} from '@client/services/scheduler.service';
import {WorkerService} from '@client/services/worker.service';
import {firstValueFrom} from 'rxjs';
import {SessionService} from '../auth/session.service';
import {detailsByField, errorMessage} from '../shared/api-error';
import {
  formatInZone,
  isoToWallClock,
  knownZones,
  viewerZone,
  wallClockToIso,
} from '../shared/time-zones';
import {TaskKind, taskOf} from './scheduler-kind';
import {inBackground} from '../shared/in-background';

interface TaskOption {
  value: string;
  label: string;
}

/** The fields the API's 422 details can name, and where they are shown. */
const FIELD_OF_PATH: Record<string, string> = {
  description: 'description',
  schedule: 'schedule',
  date_time: 'date_time',
  timezone: 'timezone',
  report_id: 'task',
  worker_id: 'task',
  reminder_id: 'task',
  params: 'params',
  overlap_policy: 'overlap_policy',
  status: 'status',
  calendar_ids: 'calendar_ids',
  starts_at: 'starts_at',
  ends_at: 'ends_at',
  notify: 'notify',
};

type Notify = Required<NonNullable<Scheduler['notify']>>;

/** The API's defaults: the owner hears of failures and recoveries on the web. */
const DEFAULT_NOTIFY: Notify = {
  on_failure: true,
  on_recovery: true,
  email: false,
  group: false,
};

@Component({
  selector: 'app-scheduler-editor',
  changeDetection: ChangeDetectionStrategy.OnPush,
  imports: [RouterLink],
  template: `
    <h1>{{ id() ? 'Edit scheduler' : 'New scheduler' }}</h1>
    @if (!session.canWrite()) {
      <p class="error" role="alert">
        Your role may read schedulers but not change them.
      </p>
    }
    <div class="form-grid">
      <form (submit)="save($event)" novalidate>
        <div class="field">
          <label for="description">Description</label>
          <input
            id="description"
            [value]="description()"
            (input)="description.set($any($event.target).value)"
            [attr.aria-invalid]="!!errors()['description']"
            aria-describedby="description-error"
            required
          />
          <p id="description-error" class="field-error">
            {{ errors()['description'] }}
          </p>
        </div>
        <div class="field">
          <label for="schedule">Schedule</label>
          <input
            id="schedule"
            placeholder="cron, e.g. 0 6 * * 1-5 (leave empty for a one-time run)"
            [value]="schedule()"
            (input)="schedule.set($any($event.target).value); changed()"
            [attr.aria-invalid]="!!errors()['schedule']"
            aria-describedby="schedule-hint schedule-error"
          />
          <p id="schedule-hint" class="muted">
            Minute, hour, day of month, month, day of week; or &#64;daily,
            &#64;hourly…
          </p>
          <p id="schedule-error" class="field-error">
            {{ errors()['schedule'] }}
          </p>
        </div>
        <div class="field">
          <label for="date_time">Date and time</label>
          <input
            id="date_time"
            type="datetime-local"
            [value]="dateTime()"
            (input)="dateTime.set($any($event.target).value); changed()"
            [attr.aria-invalid]="!!errors()['date_time']"
            aria-describedby="date_time-hint date_time-error"
          />
          <p id="date_time-hint" class="muted">
            For a one-time run, in the time zone below.
          </p>
          <p id="date_time-error" class="field-error">
            {{ errors()['date_time'] }}
          </p>
        </div>
        <div class="field">
          <label for="timezone">Time zone</label>
          <input
            id="timezone"
            list="zones"
            [value]="timezone()"
            (input)="timezone.set($any($event.target).value); changed()"
            [attr.aria-invalid]="!!errors()['timezone']"
            aria-describedby="timezone-error"
          />
          <datalist id="zones">
            @for (zone of zones; track zone) {
              <option [value]="zone"></option>
            }
          </datalist>
          <p id="timezone-error" class="field-error">
            {{ errors()['timezone'] }}
          </p>
        </div>
        <div class="field">
          <label for="task">Task</label>
          <select
            id="task"
            (change)="task.set($any($event.target).value)"
            [attr.aria-invalid]="!!errors()['task']"
            aria-describedby="task-error"
          >
            <option value="" [selected]="task() === ''">Choose a task</option>
            @for (option of tasks(); track option.value) {
              <option
                [value]="option.value"
                [selected]="option.value === task()"
              >
                {{ option.label }}
              </option>
            }
          </select>
          <p id="task-error" class="field-error">{{ errors()['task'] }}</p>
        </div>
        <div class="field">
          <label for="params">Parameters</label>
          <textarea
            id="params"
            rows="6"
            [value]="paramsText()"
            (input)="paramsText.set($any($event.target).value)"
            [attr.aria-invalid]="!!paramsError()"
            aria-describedby="params-error"
          ></textarea>
          <p id="params-error" class="field-error">{{ paramsError() }}</p>
        </div>
        <div class="field">
          <label for="overlap_policy">Overlap policy</label>
          <select
            id="overlap_policy"
            (change)="overlap.set($any($event.target).value)"
            aria-describedby="overlap_policy-error"
          >
            <option value="allow" [selected]="overlap() === 'allow'">
              Allow: every due run is sent
            </option>
            <option value="skip" [selected]="overlap() === 'skip'">
              Skip: not while an earlier run is unfinished
            </option>
          </select>
          <p id="overlap_policy-error" class="field-error">
            {{ errors()['overlap_policy'] }}
          </p>
        </div>
        <fieldset>
          <legend>Calendars</legend>
          @for (calendar of calendars(); track calendar.id) {
            <div>
              <input
                type="checkbox"
                [id]="'calendar-' + calendar.id"
                [checked]="calendarIds().includes(calendar.id!)"
                (change)="
                  toggleCalendar(calendar.id!, $any($event.target).checked)
                "
              />
              <label [for]="'calendar-' + calendar.id">
                {{ calendar.name }} ({{ calendar.kind }})</label
              >
            </div>
          } @empty {
            <p class="muted">No calendars yet.</p>
          }
          <p class="field-error">{{ errors()['calendar_ids'] }}</p>
        </fieldset>
        <div class="field">
          <label for="starts_at">Active from</label>
          <input
            id="starts_at"
            type="datetime-local"
            [value]="startsAt()"
            (input)="startsAt.set($any($event.target).value)"
            aria-describedby="window-hint starts_at-error"
          />
          <p id="starts_at-error" class="field-error">
            {{ errors()['starts_at'] }}
          </p>
        </div>
        <div class="field">
          <label for="ends_at">Active until</label>
          <input
            id="ends_at"
            type="datetime-local"
            [value]="endsAt()"
            (input)="endsAt.set($any($event.target).value)"
            aria-describedby="window-hint ends_at-error"
          />
          <p id="window-hint" class="muted">
            Optional, in the time zone above: no run before or after.
          </p>
          <p id="ends_at-error" class="field-error">
            {{ errors()['ends_at'] }}
          </p>
        </div>
        <fieldset>
          <legend>Notices</legend>
          @for (option of notifyOptions; track option.key) {
            <div>
              <input
                type="checkbox"
                [id]="'notify-' + option.key"
                [checked]="notify()[option.key]"
                (change)="setNotify(option.key, $any($event.target).checked)"
              />
              <label [for]="'notify-' + option.key"> {{ option.label }}</label>
            </div>
          }
          <p class="field-error">{{ errors()['notify'] }}</p>
        </fieldset>
        <div>
          <input
            id="active"
            type="checkbox"
            [checked]="active()"
            (change)="active.set($any($event.target).checked)"
          />
          <label for="active"> Active</label>
          <p class="field-error">{{ errors()['status'] }}</p>
        </div>
        <div class="field">
          <label for="change-reason">Reason for the audit log (optional)</label>
          <input
            id="change-reason"
            maxlength="500"
            [value]="reason()"
            (input)="reason.set($any($event.target).value)"
          />
        </div>
        @if (saveError(); as message) {
          <p class="error" role="alert">{{ message }}</p>
        }
        <div class="toolbar">
          <button type="submit" [disabled]="!session.canWrite() || busy()">
            Save
          </button>
          <a
            class="button secondary"
            [routerLink]="id() ? ['/schedulers', id()] : ['/schedulers']"
            >Cancel</a
          >
        </div>
      </form>
      <section
        class="preview"
        aria-labelledby="preview-heading"
        aria-live="polite"
      >
        <h2 id="preview-heading">Preview</h2>
        @if (preview(); as p) {
          <p data-testid="schedule-words">
            <strong>{{ p.description }}</strong> ({{ p.timezone }})
          </p>
          <h3>Next runs</h3>
          <ol class="next-runs">
            @for (run of p.runs; track run) {
              <li>
                {{ inZone(run, p.timezone) }} in {{ p.timezone }}
                <span class="muted">· {{ inZone(run) }} your time</span>
              </li>
            } @empty {
              <li class="muted">No run ahead.</li>
            }
          </ol>
        } @else if (previewError()) {
          <p class="field-error">{{ previewError() }}</p>
        } @else {
          <p class="muted">
            Type a schedule or a date and time to see when it runs.
          </p>
        }
      </section>
    </div>
  `,
})
export class SchedulerEditorComponent implements OnInit {
  /** The route's `:id`, absent when creating. */
  readonly id = input<string>();
  protected readonly session = inject(SessionService);
  private readonly api = inject(SchedulerService);
  private readonly reports = inject(ReportService);
  private readonly workers = inject(WorkerService);
  private readonly reminders = inject(ReminderService);
  private readonly calendarApi = inject(CalendarService);
  private readonly router = inject(Router);
  protected readonly zones = knownZones();

  protected readonly description = signal('');
  protected readonly schedule = signal('');
  protected readonly dateTime = signal('');
  protected readonly timezone = signal(viewerZone());
  protected readonly task = signal('');
  protected readonly paramsText = signal('{}');
  protected readonly overlap = signal<'allow' | 'skip'>('allow');
  protected readonly active = signal(true);
  /** Sent as X-Change-Reason, so the audit log says why. */
  protected readonly reason = signal('');
  protected readonly calendars = signal<Calendar[]>([]);
  protected readonly calendarIds = signal<number[]>([]);
  protected readonly startsAt = signal('');
  protected readonly endsAt = signal('');
  protected readonly notify = signal<Notify>({...DEFAULT_NOTIFY});
  protected readonly notifyOptions: Array<{key: keyof Notify; label: string}> =
    [
      {key: 'on_failure', label: 'Tell me when a run fails for good'},
      {key: 'on_recovery', label: 'Tell me when it recovers'},
      {key: 'email', label: 'Also by e-mail'},
      {key: 'group', label: 'Tell its group too'},
    ];
  protected readonly tasks = signal<TaskOption[]>([]);
  protected readonly errors = signal<Record<string, string>>({});
  protected readonly saveError = signal<string | null>(null);
  protected readonly busy = signal(false);
  protected readonly preview = signal<SchedulePreview | null>(null);
  protected readonly previewError = signal<string | null>(null);
  protected readonly paramsError = computed(
    () => parseParams(this.paramsText()).error ?? this.errors()['params'],
  );
  private previewTimer: ReturnType<typeof setTimeout> | undefined;
  private previewSequence = 0;

  constructor() {
    inject(DestroyRef).onDestroy(() => clearTimeout(this.previewTimer));
  }

  async ngOnInit(): Promise<void> {
    inBackground(this.loadTasks());
    const id = Number(this.id());
    if (!id) return;
    try {
      this.fill(await firstValueFrom(this.api.findById({id})));
      this.changed();
    } catch (error) {
      this.saveError.set(errorMessage(error));
    }
  }

  protected toggleCalendar(id: number, on: boolean): void {
    this.calendarIds.update(ids =>
      on
        ? [...ids.filter(known => known !== id), id]
        : ids.filter(known => known !== id),
    );
  }

  protected setNotify(key: keyof Notify, on: boolean): void {
    this.notify.update(current => ({...current, [key]: on}));
  }

  protected inZone(iso: string, zone?: string): string {
    return formatInZone(iso, zone);
  }

  /** Preview 300 ms after the last keystroke; only the latest answer counts. */
  protected changed(): void {
    clearTimeout(this.previewTimer);
    this.previewTimer = setTimeout(() => inBackground(this.loadPreview()), 300);
  }

  protected async save(event: Event): Promise<void> {
    event.preventDefault();
    const params = parseParams(this.paramsText());
    if (params.error) return;
    this.busy.set(true);
    this.saveError.set(null);
    this.errors.set({});
    try {
      const body = {...this.body(), params: params.value};
      const id = Number(this.id());
      const reason = this.reason().trim() || undefined;
      const saved = id
        ? await firstValueFrom(
            this.api.updateById({id, body, 'X-Change-Reason': reason}),
          )
        : await firstValueFrom(
            this.api.create({body, 'X-Change-Reason': reason}),
          );
      await this.router.navigate(['/schedulers', saved.id]);
    } catch (error) {
      this.showErrors(error);
    } finally {
      this.busy.set(false);
    }
  }

  private body() {
    const [kind, taskId] = this.task().split(':') as [TaskKind | '', string];
    const task = (which: TaskKind) => (kind === which ? Number(taskId) : null);
    const zone = this.timezone().trim();
    const schedule = this.schedule().trim();
    return {
      description: this.description(),
      schedule: schedule || null,
      date_time: schedule ? null : this.dateTimeIso(),
      timezone: zone || null,
      report_id: task('report'),
      worker_id: task('worker'),
      reminder_id: task('reminder'),
      overlap_policy: this.overlap(),
      status: this.active(),
      calendar_ids: this.calendarIds(),
      starts_at: this.windowIso(this.startsAt()),
      ends_at: this.windowIso(this.endsAt()),
      notify: this.notify(),
    };
  }

  private windowIso(local: string): string | null {
    if (!local) return null;
    return wallClockToIso(local, this.timezone().trim() || viewerZone());
  }

  private dateTimeIso(): string | null {
    const local = this.dateTime();
    if (!local) return null;
    return wallClockToIso(local, this.timezone().trim() || viewerZone());
  }

  private showErrors(error: unknown): void {
    const byPath = detailsByField(error);
    const fields: Record<string, string> = {};
    const rest: string[] = [];
    for (const [path, message] of Object.entries(byPath)) {
      const field = FIELD_OF_PATH[path];
      if (field)
        fields[field] = fields[field]
          ? `${fields[field]}; ${message}`
          : message;
      else rest.push(path ? `${path}: ${message}` : message);
    }
    this.errors.set(fields);
    const general = errorMessage(error);
    this.saveError.set(rest.length ? `${general} ${rest.join('; ')}` : general);
  }

  private async loadPreview(): Promise<void> {
    const sequence = ++this.previewSequence;
    const schedule = this.schedule().trim();
    const dateTime = schedule ? null : this.dateTimeIso();
    if (!schedule && !dateTime) {
      this.preview.set(null);
      this.previewError.set(null);
      return;
    }
    const zone = this.timezone().trim();
    try {
      const answer = await firstValueFrom(
        this.api.preview({
          body: {
            ...(schedule ? {schedule} : {date_time: dateTime!}),
            ...(zone ? {timezone: zone} : {}),
            count: 5,
          },
        }),
      );
      if (sequence !== this.previewSequence) return;
      this.preview.set(answer);
      this.previewError.set(null);
      this.errors.update(
        ({schedule: _s, date_time: _d, timezone: _t, ...rest}) => rest,
      );
    } catch (error) {
      if (sequence !== this.previewSequence) return;
      this.preview.set(null);
      const byPath = detailsByField(error);
      const fields: Record<string, string> = {};
      for (const key of ['schedule', 'date_time', 'timezone']) {
        if (byPath[key]) fields[key] = byPath[key];
      }
      this.errors.update(current => ({...current, ...fields}));
      this.previewError.set(errorMessage(error));
    }
  }

  private fill(scheduler: Scheduler): void {
    const zone = scheduler.timezone ?? '';
    this.description.set(scheduler.description);
    this.schedule.set(scheduler.schedule ?? '');
    this.timezone.set(zone);
    this.dateTime.set(
      scheduler.date_time
        ? isoToWallClock(scheduler.date_time, zone || viewerZone())
        : '',
    );
    const {kind, id} = taskOf(scheduler);
    this.task.set(`${kind}:${id}`);
    this.paramsText.set(JSON.stringify(scheduler.params ?? {}, null, 2));
    this.overlap.set(scheduler.overlap_policy ?? 'allow');
    this.active.set(scheduler.status ?? true);
    this.calendarIds.set(scheduler.calendar_ids ?? []);
    const wall = (iso?: string | null) =>
      iso ? isoToWallClock(iso, zone || viewerZone()) : '';
    this.startsAt.set(wall(scheduler.starts_at));
    this.endsAt.set(wall(scheduler.ends_at));
    this.notify.set({...DEFAULT_NOTIFY, ...scheduler.notify});
  }

  private async loadTasks(): Promise<void> {
    try {
      const [reports, workers, reminders, calendars] = await Promise.all([
        firstValueFrom(this.reports.find()),
        firstValueFrom(this.workers.find()),
        firstValueFrom(this.reminders.find()),
        firstValueFrom(
          this.calendarApi.find({filter: {order: ['name ASC'], limit: 1000}}),
        ),
      ]);
      this.calendars.set(calendars);
      this.tasks.set([
        ...reports.map(r => ({
          value: `report:${r.id}`,
          label: `Report: ${r.name} (#${r.id})`,
        })),
        ...workers.map(w => ({
          value: `worker:${w.id}`,
          label: `Worker: ${w.name} (#${w.id})`,
        })),
        ...reminders.map(r => ({
          value: `reminder:${r.id}`,
          label: `Reminder: ${r.message.slice(0, 40)} (#${r.id})`,
        })),
      ]);
    } catch (error) {
      this.saveError.set(errorMessage(error));
    }
  }
}

function parseParams(text: string): {
  value?: Record<string, unknown>;
  error?: string;
} {
  try {
    const value: unknown = JSON.parse(text.trim() || '{}');
    if (!value || typeof value !== 'object' || Array.isArray(value)) {
      return {error: 'Parameters must be a JSON object, e.g. {"batch": 5}'};
    }
    return {value: value as Record<string, unknown>};
  } catch (error) {
    return {error: `Not valid JSON: ${(error as Error).message}`};
  }
}
