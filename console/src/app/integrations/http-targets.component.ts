import {
  ChangeDetectionStrategy,
  Component,
  inject,
  signal,
} from '@angular/core';
import type {HttpTarget} from '@client/models/http-target';
import {HttpTargetService} from '@client/services/http-target.service';
import {firstValueFrom} from 'rxjs';
import {SessionService} from '../auth/session.service';
import {detailsByField, errorMessage} from '../shared/api-error';
import {inBackground} from '../shared/in-background';
import {SecretOnceComponent} from './secret-once.component';

const METHODS = ['POST', 'GET', 'PUT', 'PATCH', 'DELETE'] as const;
type Method = (typeof METHODS)[number];

/** HTTP targets (everyone reads; admins and operators write): create, edit, rotate, delete. */
@Component({
  selector: 'app-http-targets',
  changeDetection: ChangeDetectionStrategy.OnPush,
  imports: [SecretOnceComponent],
  template: `
    <h1>HTTP targets</h1>
    @if (message(); as text) {
      <p class="notice" role="status">{{ text }}</p>
    }
    @if (error(); as text) {
      <p class="error" role="alert">{{ text }}</p>
    }
    @if (shownSecret(); as secret) {
      <app-secret-once
        label="Signing secret"
        fieldId="target-secret"
        [secret]="secret"
        (dismissed)="shownSecret.set(null)"
      />
    }
    @if (session.canWrite()) {
      <form class="panel" (submit)="save($event)" aria-labelledby="new-target">
        <h2 id="new-target">
          @if (editing(); as target) {
            Edit HTTP target #{{ target.id }}
          } @else {
            New HTTP target
          }
        </h2>
        <label for="target-name">Name</label>
        <input
          id="target-name"
          required
          [value]="name()"
          (input)="name.set($any($event.target).value)"
        />
        <p class="field-error">{{ fieldErrors()['name'] }}</p>
        <label for="target-url">URL</label>
        <input
          id="target-url"
          type="url"
          required
          [value]="url()"
          (input)="url.set($any($event.target).value)"
        />
        <p class="field-error">{{ fieldErrors()['url'] }}</p>
        <label for="target-method">Method</label>
        <select
          id="target-method"
          (change)="method.set($any($event.target).value)"
        >
          @for (option of methods; track option) {
            <option [value]="option" [selected]="option === method()">
              {{ option }}
            </option>
          }
        </select>
        <label for="target-auth">
          Authorization header (write-only, never shown again{{
            editing() ? '; empty keeps the stored one' : ''
          }})
        </label>
        <input
          id="target-auth"
          type="password"
          autocomplete="off"
          [value]="authorization()"
          (input)="authorization.set($any($event.target).value)"
        />
        <label for="target-body">Body</label>
        <textarea
          id="target-body"
          rows="3"
          [value]="body()"
          (input)="body.set($any($event.target).value)"
        ></textarea>
        <p class="field-error">{{ fieldErrors()['body'] }}</p>
        <label for="target-timeout">Timeout (ms)</label>
        <input
          id="target-timeout"
          type="number"
          min="100"
          max="600000"
          [value]="timeoutMs()"
          (input)="timeoutMs.set(+$any($event.target).value)"
        />
        <p class="field-error">{{ fieldErrors()['timeout_ms'] }}</p>
        <div class="toolbar">
          <button type="submit">
            {{ editing() ? 'Save changes' : 'Create target' }}
          </button>
          @if (editing()) {
            <button type="button" class="secondary" (click)="cancelEdit()">
              Cancel
            </button>
          }
        </div>
      </form>
    }
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Call</th>
            <th scope="col">Write-only headers</th>
            <th scope="col">Timeout</th>
            @if (session.canWrite()) {
              <th scope="col">Actions</th>
            }
          </tr>
        </thead>
        <tbody>
          @for (target of targets(); track target.id) {
            <tr>
              <td>#{{ target.id }} {{ target.name }}</td>
              <td>
                <code>{{ target.method }} {{ target.url }}</code>
              </td>
              <td>{{ (target.secret_header_names ?? []).join(', ') }}</td>
              <td>{{ target.timeout_ms }} ms</td>
              @if (session.canWrite()) {
                <td class="actions">
                  <button
                    type="button"
                    [attr.aria-label]="'Edit HTTP target ' + target.name"
                    (click)="edit(target)"
                  >
                    Edit
                  </button>
                  <button
                    type="button"
                    [attr.aria-label]="
                      'Rotate secret of HTTP target ' + target.name
                    "
                    (click)="rotate(target)"
                  >
                    Rotate secret
                  </button>
                  <button
                    type="button"
                    class="secondary"
                    [attr.aria-label]="'Delete HTTP target ' + target.name"
                    (click)="remove(target)"
                  >
                    Delete
                  </button>
                </td>
              }
            </tr>
          } @empty {
            <tr>
              <td colspan="5" class="muted">No HTTP targets.</td>
            </tr>
          }
        </tbody>
      </table>
    </div>
  `,
})
export class HttpTargetsComponent {
  protected readonly session = inject(SessionService);
  private readonly api = inject(HttpTargetService);
  protected readonly methods = METHODS;
  protected readonly targets = signal<HttpTarget[]>([]);
  protected readonly name = signal('');
  protected readonly url = signal('');
  protected readonly method = signal<Method>('POST');
  protected readonly authorization = signal('');
  protected readonly body = signal('');
  protected readonly timeoutMs = signal(30000);
  protected readonly shownSecret = signal<string | null>(null);
  /** The target the form edits; null while it creates one. */
  protected readonly editing = signal<HttpTarget | null>(null);
  protected readonly fieldErrors = signal<Record<string, string>>({});
  protected readonly message = signal<string | null>(null);
  protected readonly error = signal<string | null>(null);

  constructor() {
    inBackground(this.load());
  }

  protected edit(target: HttpTarget): void {
    this.editing.set(target);
    this.name.set(target.name);
    this.url.set(target.url);
    this.method.set(target.method ?? 'POST');
    this.body.set(target.body ?? '');
    this.timeoutMs.set(target.timeout_ms ?? 30000);
    this.authorization.set('');
    this.fieldErrors.set({});
  }

  protected cancelEdit(): void {
    this.editing.set(null);
    this.clearForm();
  }

  protected async save(event: Event): Promise<void> {
    event.preventDefault();
    const target = this.editing();
    if (!target) return this.create();
    const authorization = this.authorization().trim();
    await this.act(async () => {
      const saved = await firstValueFrom(
        this.api.updateById({
          id: target.id!,
          body: {
            name: this.name().trim(),
            url: this.url().trim(),
            method: this.method(),
            timeout_ms: this.timeoutMs(),
            body: this.body() || null,
            ...(authorization
              ? {secret_headers: {Authorization: authorization}}
              : {}),
          },
        }),
      );
      this.editing.set(null);
      this.clearForm();
      return `HTTP target "${saved.name}" saved.`;
    });
  }

  private clearForm(): void {
    this.name.set('');
    this.url.set('');
    this.method.set('POST');
    this.body.set('');
    this.timeoutMs.set(30000);
    this.authorization.set('');
  }

  private async create(): Promise<void> {
    const authorization = this.authorization().trim();
    await this.act(async () => {
      const created = await firstValueFrom(
        this.api.create({
          body: {
            name: this.name().trim(),
            url: this.url().trim(),
            method: this.method(),
            timeout_ms: this.timeoutMs(),
            ...(this.body() ? {body: this.body()} : {}),
            ...(authorization
              ? {secret_headers: {Authorization: authorization}}
              : {}),
          },
        }),
      );
      this.shownSecret.set(created.signing_secret);
      this.clearForm();
      return `HTTP target "${created.name}" created.`;
    });
  }

  protected async rotate(target: HttpTarget): Promise<void> {
    await this.act(async () => {
      const rotated = await firstValueFrom(
        this.api.rotateSecret({id: target.id!, body: {}}),
      );
      this.shownSecret.set(rotated.signing_secret);
      return `HTTP target "${target.name}": new secret; the previous one signs too until ${rotated.previous_secret_expires_at}.`;
    });
  }

  protected async remove(target: HttpTarget): Promise<void> {
    await this.act(async () => {
      await firstValueFrom(this.api.deleteById({id: target.id!}));
      return `HTTP target "${target.name}" deleted.`;
    });
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
      this.targets.set(
        await firstValueFrom(this.api.find({filter: {order: ['id DESC']}})),
      );
    } catch (error) {
      this.error.set(errorMessage(error));
    }
  }
}
