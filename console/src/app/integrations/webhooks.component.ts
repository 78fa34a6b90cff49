import {
  ChangeDetectionStrategy,
  Component,
  inject,
  signal,
} from '@angular/core';
import type {Webhook} from '@client/models/webhook';
import type {WebhookDelivery} from '@client/models/webhook-delivery';
import {WebhookService} from '@client/services/webhook.service';
import {firstValueFrom} from 'rxjs';
import {detailsByField, errorMessage} from '../shared/api-error';
import {inBackground} from '../shared/in-background';
import {ZonedTimeComponent} from '../shared/zoned-time.component';
import {SecretOnceComponent} from './secret-once.component';

type WebhookEvent = Webhook['events'][number];

/** Every event an endpoint may hear of, in the API's words. */
const EVENTS: WebhookEvent[] = [
  'run.succeeded',
  'run.failed',
  'run.parked',
  'run.skipped',
  'scheduler.created',
  'scheduler.updated',
  'scheduler.deleted',
  'notice.failure',
  'notice.digest',
  'notice.recovery',
  'notice.missed_runs',
];

/** Webhooks (admins: all; operators: their own): create, edit, rotate, test, delete, delivery log. */
@Component({
  selector: 'app-webhooks',
  changeDetection: ChangeDetectionStrategy.OnPush,
  imports: [ZonedTimeComponent, SecretOnceComponent],
  template: `
    <h1>Webhooks</h1>
    @if (message(); as text) {
      <p class="notice" role="status">{{ text }}</p>
    }
    @if (error(); as text) {
      <p class="error" role="alert">{{ text }}</p>
    }
    @if (shownSecret(); as secret) {
      <app-secret-once
        label="Signing secret"
        fieldId="webhook-secret"
        [secret]="secret"
        (dismissed)="shownSecret.set(null)"
      />
    }
    <form class="panel" (submit)="save($event)" aria-labelledby="new-webhook">
      <h2 id="new-webhook">
        @if (editing(); as hook) {
          Edit webhook #{{ hook.id }}
        } @else {
          New webhook
        }
      </h2>
      <label for="webhook-url">URL</label>
      <input
        id="webhook-url"
        type="url"
        required
        [value]="url()"
        (input)="url.set($any($event.target).value)"
      />
      <p class="field-error">{{ fieldErrors()['url'] }}</p>
      <fieldset>
        <legend>Events</legend>
        @for (event of events; track event) {
          <label class="inline">
            <input
              type="checkbox"
              [checked]="chosen().has(event)"
              (change)="choose(event, $any($event.target).checked)"
            />
            {{ event }}
          </label>
        }
      </fieldset>
      <p class="field-error">{{ fieldErrors()['events'] }}</p>
      <label for="webhook-schedulers"
        >Scheduler ids (comma-separated; empty: all yours)</label
      >
      <input
        id="webhook-schedulers"
        [value]="schedulerIds()"
        (input)="schedulerIds.set($any($event.target).value)"
      />
      <p class="field-error">{{ fieldErrors()['scheduler_ids'] }}</p>
      <div class="toolbar">
        <button type="submit">
          {{ editing() ? 'Save changes' : 'Create webhook' }}
        </button>
        @if (editing()) {
          <button type="button" class="secondary" (click)="cancelEdit()">
            Cancel
          </button>
        }
      </div>
    </form>
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            <th scope="col">URL</th>
            <th scope="col">Events</th>
            <th scope="col">State</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          @for (hook of hooks(); track hook.id) {
            <tr>
              <td>
                #{{ hook.id }} <code>{{ hook.url }}</code>
              </td>
              <td>{{ hook.events.join(', ') }}</td>
              <td>
                @if (hook.active) {
                  active
                } @else {
                  disabled: {{ hook.disabled_reason }}
                }
              </td>
              <td class="actions">
                <button
                  type="button"
                  [attr.aria-label]="'Edit webhook ' + hook.id"
                  (click)="edit(hook)"
                >
                  Edit
                </button>
                <button
                  type="button"
                  [attr.aria-label]="'Deliveries of webhook ' + hook.id"
                  (click)="showDeliveries(hook)"
                >
                  Deliveries
                </button>
                <button
                  type="button"
                  [attr.aria-label]="'Test webhook ' + hook.id + ' with a ping'"
                  (click)="ping(hook)"
                >
                  Test
                </button>
                <button
                  type="button"
                  [attr.aria-label]="'Rotate secret of webhook ' + hook.id"
                  (click)="rotate(hook)"
                >
                  Rotate secret
                </button>
                @if (!hook.active) {
                  <button
                    type="button"
                    [attr.aria-label]="'Enable webhook ' + hook.id"
                    (click)="enable(hook)"
                  >
                    Enable
                  </button>
                }
                <button
                  type="button"
                  class="secondary"
                  [attr.aria-label]="'Delete webhook ' + hook.id"
                  (click)="remove(hook)"
                >
                  Delete
                </button>
              </td>
            </tr>
          } @empty {
            <tr>
              <td colspan="4" class="muted">No webhooks.</td>
            </tr>
          }
        </tbody>
      </table>
    </div>
    @if (logOf(); as hook) {
      <section aria-labelledby="delivery-log">
        <h2 id="delivery-log">Deliveries of webhook #{{ hook.id }}</h2>
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">Status</th>
                <th scope="col">Attempts</th>
                <th scope="col">Status code</th>
                <th scope="col">Time</th>
                <th scope="col">Error</th>
              </tr>
            </thead>
            <tbody>
              @for (delivery of deliveries(); track delivery.id) {
                <tr>
                  <td>{{ delivery.event }}</td>
                  <td>{{ delivery.status }}</td>
                  <td>{{ delivery.attempts }}</td>
                  <td>{{ delivery.status_code ?? '–' }}</td>
                  <td>
                    <app-time
                      [at]="delivery.last_attempt_at ?? delivery.created_at"
                    />
                  </td>
                  <td>{{ delivery.error ?? '' }}</td>
                </tr>
              } @empty {
                <tr>
                  <td colspan="6" class="muted">No deliveries yet.</td>
                </tr>
              }
            </tbody>
          </table>
        </div>
        <button type="button" class="secondary" (click)="showDeliveries(hook)">
          Refresh
        </button>
      </section>
    }
  `,
})
export class WebhooksComponent {
  private readonly api = inject(WebhookService);
  protected readonly events = EVENTS;
  protected readonly hooks = signal<Webhook[]>([]);
  protected readonly url = signal('');
  protected readonly chosen = signal(new Set<WebhookEvent>(['run.failed']));
  protected readonly schedulerIds = signal('');
  protected readonly shownSecret = signal<string | null>(null);
  /** The webhook the form edits; null while it creates one. */
  protected readonly editing = signal<Webhook | null>(null);
  protected readonly logOf = signal<Webhook | null>(null);
  protected readonly deliveries = signal<WebhookDelivery[]>([]);
  protected readonly fieldErrors = signal<Record<string, string>>({});
  protected readonly message = signal<string | null>(null);
  protected readonly error = signal<string | null>(null);

  constructor() {
    inBackground(this.load());
  }

  protected choose(event: WebhookEvent, on: boolean): void {
    const next = new Set(this.chosen());
    if (on) next.add(event);
    else next.delete(event);
    this.chosen.set(next);
  }

  protected edit(hook: Webhook): void {
    this.editing.set(hook);
    this.url.set(hook.url);
    this.chosen.set(new Set(hook.events));
    this.schedulerIds.set((hook.scheduler_ids ?? []).join(', '));
    this.fieldErrors.set({});
  }

  protected cancelEdit(): void {
    this.editing.set(null);
    this.clearForm();
  }

  protected async save(event: Event): Promise<void> {
    event.preventDefault();
    const hook = this.editing();
    if (!hook) return this.create();
    await this.act(async () => {
      await firstValueFrom(
        this.api.updateById({
          id: hook.id!,
          body: {
            url: this.url().trim(),
            events: [...this.chosen()],
            scheduler_ids: this.chosenSchedulerIds(),
          },
        }),
      );
      this.editing.set(null);
      this.clearForm();
      return `Webhook #${hook.id} saved.`;
    });
  }

  private chosenSchedulerIds(): number[] {
    return this.schedulerIds()
      .split(',')
      .map(part => part.trim())
      .filter(Boolean)
      .map(Number);
  }

  private clearForm(): void {
    this.url.set('');
    this.chosen.set(new Set<WebhookEvent>(['run.failed']));
    this.schedulerIds.set('');
  }

  private async create(): Promise<void> {
    const ids = this.chosenSchedulerIds();
    await this.act(async () => {
      const created = await firstValueFrom(
        this.api.create({
          body: {
            url: this.url().trim(),
            events: [...this.chosen()],
            ...(ids.length > 0 ? {scheduler_ids: ids} : {}),
          },
        }),
      );
      this.shownSecret.set(created.signing_secret);
      this.clearForm();
      return `Webhook #${created.id} created.`;
    });
  }

  protected async rotate(hook: Webhook): Promise<void> {
    await this.act(async () => {
      const rotated = await firstValueFrom(
        this.api.rotateSecret({id: hook.id!, body: {}}),
      );
      this.shownSecret.set(rotated.signing_secret);
      return `Webhook #${hook.id}: new secret; the previous one signs too until ${rotated.previous_secret_expires_at}.`;
    });
  }

  protected async ping(hook: Webhook): Promise<void> {
    await this.act(async () => {
      await firstValueFrom(this.api.test({id: hook.id!}));
      await this.showDeliveries(hook);
      return `Ping queued for webhook #${hook.id}.`;
    });
  }

  protected async enable(hook: Webhook): Promise<void> {
    await this.act(async () => {
      await firstValueFrom(
        this.api.updateById({id: hook.id!, body: {active: true}}),
      );
      return `Webhook #${hook.id} enabled.`;
    });
  }

  protected async remove(hook: Webhook): Promise<void> {
    await this.act(async () => {
      await firstValueFrom(this.api.deleteById({id: hook.id!}));
      if (this.logOf()?.id === hook.id) this.logOf.set(null);
      return `Webhook #${hook.id} deleted.`;
    });
  }

  protected async showDeliveries(hook: Webhook): Promise<void> {
    try {
      this.deliveries.set(
        await firstValueFrom(this.api.deliveries({id: hook.id!})),
      );
      this.logOf.set(hook);
    } catch (error) {
      this.error.set(errorMessage(error));
    }
  }

  private async act(work: () => Promise<string>): Promise<void> {
    this.message.set(null);
    this.error.set(null);
    this.fieldErrors.set({});
    try {
      this.message.set(await work());
    } catch (error) {
      this.error.set(errorMessage(error));
      this.fieldErrors.set(detailsByField(error));
    }
    await this.load();
  }

  private async load(): Promise<void> {
    try {
      this.hooks.set(
        await firstValueFrom(this.api.find({filter: {order: ['id DESC']}})),
      );
    } catch (error) {
      this.error.set(errorMessage(error));
    }
  }
}
