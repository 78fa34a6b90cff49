import {
  ChangeDetectionStrategy,
  Component,
  DestroyRef,
  inject,
  signal,
} from '@angular/core';
import type {AuditEvent} from '@client/models/audit-event';
import {AuditEventService} from '@client/services/audit-event.service';
import {UserService} from '@client/services/user.service';
import {SessionService} from '../auth/session.service';
import {firstValueFrom} from 'rxjs';
import {errorMessage} from '../shared/api-error';
import {pollWhileVisible} from '../shared/polling';
import {PagerComponent} from '../shared/pager.component';
import {ZonedTimeComponent} from '../shared/zoned-time.component';
import {inBackground} from '../shared/in-background';

const PAGE_SIZE = 50;

interface AuditFilter {
  entity: string;
  action: string;
  actor: string;
  reason: string;
}

@Component({
  selector: 'app-audit',
  changeDetection: ChangeDetectionStrategy.OnPush,
  imports: [ZonedTimeComponent, PagerComponent],
  template: `
    <h1>Audit</h1>
    <form class="toolbar" role="search" (submit)="apply($event)">
      <div class="field">
        <label for="audit-entity">Entity</label>
        <select id="audit-entity" name="entity">
          <option value="">Any entity</option>
          @for (entity of entities; track entity) {
            <option [value]="entity">{{ entity }}</option>
          }
        </select>
      </div>
      <div class="field">
        <label for="audit-action">Action</label>
        <input id="audit-action" name="action" placeholder="e.g. update, run" />
      </div>
      <div class="field">
        <label for="audit-actor">User id</label>
        <input id="audit-actor" name="actor" inputmode="numeric" />
      </div>
      <div class="field">
        <label for="audit-reason">Reason contains</label>
        <input id="audit-reason" name="reason" />
      </div>
      <button type="submit">Filter</button>
    </form>
    @if (error(); as text) {
      <p class="error" role="alert">{{ text }}</p>
    }
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Who</th>
            <th scope="col">What</th>
            <th scope="col">On</th>
            <th scope="col">Why</th>
            <th scope="col">Changes</th>
          </tr>
        </thead>
        <tbody>
          @for (event of events(); track event.id) {
            <tr>
              <td><app-time [at]="event.at" /></td>
              <td>{{ actorName(event.actor_user_id) }}</td>
              <td>{{ event.action }}</td>
              <td>{{ event.entity }} {{ event.entity_id ?? '' }}</td>
              <td>{{ event.reason ?? '' }}</td>
              <td>
                @if (changed(event); as fields) {
                  <details>
                    <summary>{{ fields }}</summary>
                    <pre>{{ json(event.changes) }}</pre>
                  </details>
                }
              </td>
            </tr>
          } @empty {
            <tr>
              <td colspan="6" class="muted">No audit events match.</td>
            </tr>
          }
        </tbody>
      </table>
    </div>
    <app-pager
      [page]="page()"
      [hasMore]="events().length >= pageSize"
      previousLabel="Newer events"
      nextLabel="Older events"
      (pageChange)="goTo($event)"
    />
  `,
})
export class AuditComponent {
  private readonly api = inject(AuditEventService);
  private readonly users = inject(UserService);
  private readonly session = inject(SessionService);
  /** E-mail addresses by user id: admins may read the users, others see ids. */
  private readonly emails = signal(new Map<number, string>());
  protected readonly pageSize = PAGE_SIZE;
  protected readonly entities = [
    'scheduler',
    'failed_task',
    'session',
    'user',
    'worker',
    'report',
    'reminder',
    'group',
    'language',
    'config',
    'ticket',
    'notification',
  ];
  protected readonly events = signal<AuditEvent[]>([]);
  protected readonly page = signal(0);
  protected readonly error = signal<string | null>(null);
  private filter: AuditFilter = {entity: '', action: '', actor: '', reason: ''};

  constructor() {
    inBackground(this.load());
    pollWhileVisible(inject(DestroyRef), () => inBackground(this.load()));
  }

  protected apply(event: Event): void {
    event.preventDefault();
    const data = new FormData(event.target as HTMLFormElement);
    const text = (name: string) => String(data.get(name) ?? '').trim();
    this.filter = {
      entity: text('entity'),
      action: text('action'),
      actor: text('actor'),
      reason: text('reason'),
    };
    this.goTo(0);
  }

  protected goTo(page: number): void {
    this.page.set(Math.max(0, page));
    inBackground(this.load());
  }

  protected actorName(id: number | null | undefined): string {
    if (id == null) return 'anonymous';
    if (id === this.session.user()?.id) return 'you';
    const email = this.emails().get(id);
    return email ? `${email} (#${id})` : `user #${id}`;
  }

  protected changed(event: AuditEvent): string {
    return Object.keys(event.changes ?? {}).join(', ');
  }

  protected json(value: unknown): string {
    return JSON.stringify(value, null, 2);
  }

  private where(): Record<string, unknown> {
    const where: Record<string, unknown> = {};
    const {entity, action, actor, reason} = this.filter;
    if (entity) where['entity'] = entity;
    if (action) where['action'] = action;
    if (/^\d+$/.test(actor)) where['actor_user_id'] = Number(actor);
    // ilike's wildcards in the typed text are taken literally.
    if (reason)
      where['reason'] = {
        ilike: `%${reason.replace(/[\\%_]/g, c => `\\${c}`)}%`,
      };
    return where;
  }

  private async load(): Promise<void> {
    try {
      const events = await firstValueFrom(
        this.api.find({
          filter: {
            where: this.where(),
            order: ['id DESC'],
            limit: PAGE_SIZE,
            skip: this.page() * PAGE_SIZE,
          },
        }),
      );
      await this.learnEmails(events);
      this.events.set(events);
      this.error.set(null);
    } catch (error) {
      this.error.set(errorMessage(error));
    }
  }

  /** Only admins read users; a failure here leaves ids, never the list empty. */
  private async learnEmails(events: AuditEvent[]): Promise<void> {
    if (this.session.user()?.role !== 'admin') return;
    const known = this.emails();
    const ids = [
      ...new Set(
        events
          .map(event => event.actor_user_id)
          .filter((id): id is number => id != null && !known.has(id)),
      ),
    ];
    if (ids.length === 0) return;
    try {
      const found = await firstValueFrom(
        this.users.find({
          filter: {where: {id: {inq: ids}}, fields: {id: true, email: true}},
        }),
      );
      const next = new Map(known);
      for (const user of found) next.set(user.id!, user.email);
      this.emails.set(next);
    } catch {
      // The ids stay readable as they are.
    }
  }
}
