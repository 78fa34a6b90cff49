import {
  ChangeDetectionStrategy,
  Component,
  DestroyRef,
  inject,
  signal,
} from '@angular/core';
import {RouterLink} from '@angular/router';
import type {Calendar} from '@client/models/calendar';
import {CalendarService} from '@client/services/calendar.service';
import {firstValueFrom} from 'rxjs';
import {SessionService} from '../auth/session.service';
import {errorMessage} from '../shared/api-error';
import {inBackground} from '../shared/in-background';
import {pollWhileVisible} from '../shared/polling';

/** The largest .ics the API takes (it answers 413 above). */
const MAX_ICS_BYTES = 1024 * 1024;

/** Calendars: every role reads; admins and operators add, edit, delete and import. */
@Component({
  selector: 'app-calendar-list',
  changeDetection: ChangeDetectionStrategy.OnPush,
  imports: [RouterLink],
  template: `
    <h1>Calendars</h1>
    <p class="muted">
      A blackout calendar skips the fires it matches; an allowed calendar skips
      the fires it does not match. Skipped fires are never moved.
    </p>
    @if (session.canWrite()) {
      <div class="toolbar">
        <a class="button" routerLink="/calendars/new">New calendar</a>
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
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Kind</th>
            <th scope="col">Time zone</th>
            <th scope="col">Dates</th>
            <th scope="col">Times</th>
            @if (session.canWrite()) {
              <th scope="col">Actions</th>
            }
          </tr>
        </thead>
        <tbody>
          @for (calendar of calendars(); track calendar.id) {
            <tr>
              <td>
                @if (session.canWrite()) {
                  <a [routerLink]="['/calendars', calendar.id, 'edit']">{{
                    calendar.name
                  }}</a>
                } @else {
                  {{ calendar.name }}
                }
              </td>
              <td>{{ calendar.kind }}</td>
              <td>{{ calendar.time_zone }}</td>
              <td>{{ datesOf(calendar) }}</td>
              <td>
                @for (times of calendar.times ?? []; track times) {
                  <code>{{ times }}</code>
                }
              </td>
              @if (session.canWrite()) {
                <td>
                  <label class="button secondary">
                    Import .ics
                    <input
                      type="file"
                      class="sr-only"
                      accept=".ics,text/calendar"
                      [attr.aria-label]="
                        'Import an .ics file into ' + calendar.name
                      "
                      (change)="importFile(calendar, $any($event.target))"
                    />
                  </label>
                  @if (doomed() === calendar.id) {
                    <button type="button" (click)="remove(calendar)">
                      Confirm delete of {{ calendar.name }}
                    </button>
                  } @else {
                    <button
                      type="button"
                      class="secondary"
                      (click)="doomed.set(calendar.id ?? null)"
                    >
                      Delete
                    </button>
                  }
                </td>
              }
            </tr>
          } @empty {
            <tr>
              <td [attr.colspan]="session.canWrite() ? 6 : 5" class="muted">
                No calendars.
              </td>
            </tr>
          }
        </tbody>
      </table>
    </div>
  `,
})
export class CalendarListComponent {
  protected readonly session = inject(SessionService);
  private readonly api = inject(CalendarService);
  protected readonly calendars = signal<Calendar[]>([]);
  protected readonly doomed = signal<number | null>(null);
  protected readonly message = signal<string | null>(null);
  protected readonly error = signal<string | null>(null);

  constructor() {
    inBackground(this.load());
    pollWhileVisible(inject(DestroyRef), () => inBackground(this.load()));
  }

  protected datesOf(calendar: Calendar): string {
    const dates = calendar.dates ?? [];
    if (dates.length === 0) return '–';
    if (dates.length <= 3) return dates.join(', ');
    return `${dates.length} days, ${dates[0]} … ${dates[dates.length - 1]}`;
  }

  protected async remove(calendar: Calendar): Promise<void> {
    this.doomed.set(null);
    await this.act(async () => {
      await firstValueFrom(this.api.deleteById({id: calendar.id!}));
      return `Calendar ${calendar.name} deleted.`;
    });
  }

  protected async importFile(
    calendar: Calendar,
    input: HTMLInputElement,
  ): Promise<void> {
    const file = input.files?.[0];
    input.value = '';
    if (!file) return;
    if (file.size > MAX_ICS_BYTES) {
      this.error.set(`${file.name} is over 1 MiB, the most an import takes.`);
      return;
    }
    await this.act(async () => {
      const result = await firstValueFrom(
        this.api.importICalendar({id: calendar.id!, body: await file.text()}),
      );
      return `Imported ${file.name} into ${calendar.name}: ${result.added} day(s) added, ${result.dates_total} in all.`;
    });
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
    try {
      this.calendars.set(
        await firstValueFrom(
          this.api.find({filter: {order: ['name ASC'], limit: 1000}}),
        ),
      );
    } catch (error) {
      this.error.set(errorMessage(error));
    }
  }
}
