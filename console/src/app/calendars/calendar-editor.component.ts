import {
  ChangeDetectionStrategy,
  Component,
  OnInit,
  inject,
  input,
  signal,
} from '@angular/core';
import {Router, RouterLink} from '@angular/router';
import type {Calendar} from '@client/models/calendar';
import {CalendarService} from '@client/services/calendar.service';
import {firstValueFrom} from 'rxjs';
import {detailsByField, errorMessage} from '../shared/api-error';
import {knownZones, viewerZone} from '../shared/time-zones';

/** The fields a 422 can name; anything else shows above the form. */
const FIELDS = ['name', 'time_zone', 'kind', 'dates', 'times', 'description'];

/** One entry a line; blank lines dropped. */
const lines = (text: string): string[] =>
  text
    .split('\n')
    .map(line => line.trim())
    .filter(line => line !== '');

/** Creates or edits a calendar; the API judges every field (422 per field). */
@Component({
  selector: 'app-calendar-editor',
  changeDetection: ChangeDetectionStrategy.OnPush,
  imports: [RouterLink],
  template: `
    <h1>{{ id() ? 'Edit calendar' : 'New calendar' }}</h1>
    @if (saveError(); as text) {
      <p class="error" role="alert">{{ text }}</p>
    }
    <form (submit)="save($event)" novalidate>
      <div class="field">
        <label for="cal-name">Name</label>
        <input
          id="cal-name"
          [value]="name()"
          (input)="name.set($any($event.target).value)"
          [attr.aria-invalid]="!!errors()['name']"
          aria-describedby="cal-name-error"
          required
        />
        <p id="cal-name-error" class="field-error">{{ errors()['name'] }}</p>
      </div>
      <div class="field">
        <label for="cal-zone">Time zone</label>
        <input
          id="cal-zone"
          list="cal-zones"
          [value]="zone()"
          (input)="zone.set($any($event.target).value)"
          [attr.aria-invalid]="!!errors()['time_zone']"
          aria-describedby="cal-zone-error"
        />
        <datalist id="cal-zones">
          @for (known of zones; track known) {
            <option [value]="known"></option>
          }
        </datalist>
        <p id="cal-zone-error" class="field-error">
          {{ errors()['time_zone'] }}
        </p>
      </div>
      <div class="field">
        <label for="cal-kind">Kind</label>
        <select id="cal-kind" (change)="kind.set($any($event.target).value)">
          <option value="blackout" [selected]="kind() === 'blackout'">
            blackout: skip the fires it matches
          </option>
          <option value="allowed" [selected]="kind() === 'allowed'">
            allowed: skip the fires it does not match
          </option>
        </select>
      </div>
      <div class="field">
        <label for="cal-dates">Dates (YYYY-MM-DD, one a line)</label>
        <textarea
          id="cal-dates"
          rows="6"
          [value]="dates()"
          (input)="dates.set($any($event.target).value)"
          [attr.aria-invalid]="!!errors()['dates']"
          aria-describedby="cal-dates-error"
        ></textarea>
        <p id="cal-dates-error" class="field-error">{{ errors()['dates'] }}</p>
      </div>
      <div class="field">
        <label for="cal-times">Times (cron expressions, one a line)</label>
        <textarea
          id="cal-times"
          rows="3"
          [value]="times()"
          (input)="times.set($any($event.target).value)"
          [attr.aria-invalid]="!!errors()['times']"
          aria-describedby="cal-times-hint cal-times-error"
        ></textarea>
        <p id="cal-times-hint" class="muted">
          Every minute one matches is matched: <code>* 2-3 * * 0</code> is
          Sunday 02:00–03:59.
        </p>
        <p id="cal-times-error" class="field-error">{{ errors()['times'] }}</p>
      </div>
      <div class="field">
        <label for="cal-description">Description</label>
        <input
          id="cal-description"
          [value]="description()"
          (input)="description.set($any($event.target).value)"
        />
      </div>
      <div class="toolbar">
        <button type="submit" [disabled]="busy() || !loaded()">
          Save calendar
        </button>
        <a class="button secondary" routerLink="/calendars">Cancel</a>
      </div>
    </form>
  `,
})
export class CalendarEditorComponent implements OnInit {
  /** The route's `:id`, absent when creating. */
  readonly id = input<string>();
  private readonly api = inject(CalendarService);
  private readonly router = inject(Router);
  protected readonly zones = knownZones();

  protected readonly name = signal('');
  protected readonly zone = signal(viewerZone());
  protected readonly kind = signal<Calendar['kind']>('blackout');
  protected readonly dates = signal('');
  protected readonly times = signal('');
  protected readonly description = signal('');
  protected readonly errors = signal<Record<string, string>>({});
  protected readonly saveError = signal<string | null>(null);
  protected readonly busy = signal(false);
  /** False while an edited calendar is still being read: saving then would blank it. */
  protected readonly loaded = signal(true);

  async ngOnInit(): Promise<void> {
    const id = Number(this.id());
    if (!id) return;
    this.loaded.set(false);
    try {
      const calendar = await firstValueFrom(this.api.findById({id}));
      this.name.set(calendar.name);
      this.zone.set(calendar.time_zone);
      this.kind.set(calendar.kind);
      this.dates.set((calendar.dates ?? []).join('\n'));
      this.times.set((calendar.times ?? []).join('\n'));
      this.description.set(calendar.description ?? '');
      this.loaded.set(true);
    } catch (error) {
      this.saveError.set(errorMessage(error));
    }
  }

  protected async save(event: Event): Promise<void> {
    event.preventDefault();
    this.busy.set(true);
    this.saveError.set(null);
    this.errors.set({});
    const body = {
      name: this.name().trim(),
      time_zone: this.zone().trim(),
      kind: this.kind(),
      dates: lines(this.dates()),
      times: lines(this.times()),
      description: this.description().trim() || null,
    };
    try {
      const id = Number(this.id());
      if (id) await firstValueFrom(this.api.updateById({id, body}));
      else await firstValueFrom(this.api.create({body}));
      await this.router.navigate(['/calendars']);
    } catch (error) {
      const byPath = detailsByField(error);
      const fields: Record<string, string> = {};
      for (const key of FIELDS) if (byPath[key]) fields[key] = byPath[key];
      this.errors.set(fields);
      this.saveError.set(errorMessage(error));
    } finally {
      this.busy.set(false);
    }
  }
}
