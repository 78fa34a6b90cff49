import {
  ChangeDetectionStrategy,
  Component,
  inject,
  signal,
} from '@angular/core';
import type {ApiKey} from '@client/models/api-key';
import {ApiKeyService} from '@client/services/api-key.service';
import {firstValueFrom} from 'rxjs';
import {SessionService} from '../auth/session.service';
import {detailsByField, errorMessage} from '../shared/api-error';
import {inBackground} from '../shared/in-background';
import {ZonedTimeComponent} from '../shared/zoned-time.component';
import {SecretOnceComponent} from './secret-once.component';

type Role = 'admin' | 'operator' | 'viewer';
const ROLES: Role[] = ['admin', 'operator', 'viewer'];
const DAY_MS = 24 * 60 * 60 * 1000;

/** API keys for machines: your own (admins see all), made, shown once, revoked. */
@Component({
  selector: 'app-api-keys',
  changeDetection: ChangeDetectionStrategy.OnPush,
  imports: [ZonedTimeComponent, SecretOnceComponent],
  template: `
    <h1>API keys</h1>
    @if (message(); as text) {
      <p class="notice" role="status">{{ text }}</p>
    }
    @if (error(); as text) {
      <p class="error" role="alert">{{ text }}</p>
    }
    @if (shownKey(); as key) {
      <app-secret-once
        label="New API key"
        fieldId="new-api-key"
        [secret]="key"
        (dismissed)="shownKey.set(null)"
      />
    }
    <form class="panel" (submit)="create($event)" aria-labelledby="new-key">
      <h2 id="new-key">New API key</h2>
      <label for="key-name">Name</label>
      <input
        id="key-name"
        required
        maxlength="200"
        [value]="name()"
        (input)="name.set($any($event.target).value)"
      />
      <p class="field-error">{{ fieldErrors()['name'] }}</p>
      <label for="key-days">Expires in (days, at most 366)</label>
      <input
        id="key-days"
        type="number"
        min="1"
        max="366"
        [value]="days()"
        (input)="days.set(+$any($event.target).value)"
      />
      <p class="field-error">{{ fieldErrors()['expires_at'] }}</p>
      <label for="key-role">Role (no higher than yours)</label>
      <select id="key-role" (change)="role.set($any($event.target).value)">
        @for (option of roles; track option) {
          <option [value]="option" [selected]="option === role()">
            {{ option }}
          </option>
        }
      </select>
      <p class="field-error">{{ fieldErrors()['role'] }}</p>
      <button type="submit">Create key</button>
    </form>
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Key</th>
            <th scope="col">Role</th>
            <th scope="col">Expires</th>
            <th scope="col">Last used</th>
            <th scope="col">State</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          @for (key of keys(); track key.id) {
            <tr>
              <td>{{ key.name }}</td>
              <td>
                <code>{{ key.key_prefix }}…</code>
              </td>
              <td>{{ key.role }}</td>
              <td><app-time [at]="key.expires_at" /></td>
              <td>
                @if (key.last_used_at) {
                  <app-time [at]="key.last_used_at" />
                } @else {
                  never
                }
              </td>
              <td>{{ key.revoked_at ? 'revoked' : 'active' }}</td>
              <td class="actions">
                @if (!key.revoked_at) {
                  <button
                    type="button"
                    [attr.aria-label]="'Revoke API key ' + key.name"
                    (click)="revoke(key)"
                  >
                    Revoke
                  </button>
                }
              </td>
            </tr>
          } @empty {
            <tr>
              <td colspan="7" class="muted">No API keys.</td>
            </tr>
          }
        </tbody>
      </table>
    </div>
  `,
})
export class ApiKeysComponent {
  private readonly session = inject(SessionService);
  private readonly api = inject(ApiKeyService);
  protected readonly keys = signal<ApiKey[]>([]);
  protected readonly shownKey = signal<string | null>(null);
  protected readonly name = signal('');
  protected readonly days = signal(90);
  protected readonly role = signal<Role>(this.session.user()?.role ?? 'viewer');
  protected readonly roles = ROLES;
  protected readonly fieldErrors = signal<Record<string, string>>({});
  protected readonly message = signal<string | null>(null);
  protected readonly error = signal<string | null>(null);

  constructor() {
    inBackground(this.load());
  }

  protected async create(event: Event): Promise<void> {
    event.preventDefault();
    this.fieldErrors.set({});
    await this.act(async () => {
      const created = await firstValueFrom(
        this.api.create({
          body: {
            name: this.name().trim(),
            role: this.role(),
            expires_at: new Date(
              Date.now() + this.days() * DAY_MS,
            ).toISOString(),
          },
        }),
      );
      this.shownKey.set(created.key);
      this.name.set('');
      return `API key "${created.name}" created.`;
    });
  }

  protected async revoke(key: ApiKey): Promise<void> {
    await this.act(async () => {
      await firstValueFrom(this.api.revoke({id: key.id!}));
      return `API key "${key.name}" revoked.`;
    });
  }

  private async act(work: () => Promise<string>): Promise<void> {
    this.message.set(null);
    this.error.set(null);
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
      this.keys.set(await firstValueFrom(this.api.find()));
    } catch (error) {
      this.error.set(errorMessage(error));
    }
  }
}
