import {
  ChangeDetectionStrategy,
  Component,
  DestroyRef,
  inject,
  signal,
} from '@angular/core';
import {RouterLink} from '@angular/router';
import type {FailedTask} from '@client/models/failed-task';
import {FailedTaskService} from '@client/services/failed-task.service';
import {firstValueFrom} from 'rxjs';
import {SessionService} from '../auth/session.service';
import {errorMessage} from '../shared/api-error';
import {pollWhileVisible} from '../shared/polling';
import {ZonedTimeComponent} from '../shared/zoned-time.component';
import {inBackground} from '../shared/in-background';

/** The failure's first line is its reason; the rest (a stack) folds away. */
function splitReason(text: string): {reason: string; stack: string} {
  const [reason, ...rest] = text.split('\n');
  return {reason, stack: rest.join('\n').trim()};
}

@Component({
  selector: 'app-failed-tasks',
  changeDetection: ChangeDetectionStrategy.OnPush,
  imports: [RouterLink, ZonedTimeComponent],
  template: `
    <h1>Failed tasks</h1>
    <div class="toolbar" role="search">
      <div class="field">
        <label for="failed-search">Search</label>
        <input
          id="failed-search"
          type="search"
          placeholder="params or failure reason"
          (input)="setQuery($any($event.target).value)"
        />
      </div>
      @if (session.canWrite() && selected().size > 0) {
        <button type="button" (click)="confirmingBulk.set(true)">
          Re-drive selected ({{ selected().size }})
        </button>
      }
    </div>
    @if (confirmingBulk()) {
      <div class="panel" role="group" aria-label="Confirm bulk re-drive">
        <p>
          Re-drive {{ selected().size }} failed task(s) with their own params?
        </p>
        <button type="button" (click)="bulkRedrive()">Confirm re-drive</button>
        <button
          type="button"
          class="secondary"
          (click)="confirmingBulk.set(false)"
        >
          Cancel
        </button>
      </div>
    }
    @if (message(); as text) {
      <p class="notice" role="status">{{ text }}</p>
    }
    @if (error(); as text) {
      <p class="error" role="alert">{{ text }}</p>
    }
    @if (editing(); as task) {
      <form
        class="panel"
        (submit)="redrive($event, task)"
        aria-labelledby="redrive-heading"
      >
        <h2 id="redrive-heading">Re-drive failed task #{{ task.id }}</h2>
        <label for="redrive-params">Parameters</label>
        <textarea
          id="redrive-params"
          rows="6"
          [value]="paramsText()"
          (input)="paramsText.set($any($event.target).value)"
          aria-describedby="redrive-params-error"
        ></textarea>
        <p id="redrive-params-error" class="field-error">{{ paramsError() }}</p>
        <button type="submit">Confirm re-drive</button>
        <button type="button" class="secondary" (click)="editing.set(null)">
          Cancel
        </button>
      </form>
    }
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            @if (session.canWrite()) {
              <th scope="col"><span class="sr-only">Select</span></th>
            }
            <th scope="col">Task</th>
            <th scope="col">Scheduler</th>
            <th scope="col">Failure</th>
            <th scope="col">Retries</th>
            <th scope="col">Failed at</th>
            <th scope="col">Re-driven</th>
            @if (session.canWrite()) {
              <th scope="col">Actions</th>
            }
          </tr>
        </thead>
        <tbody>
          @for (task of tasks(); track task.id) {
            <tr>
              @if (session.canWrite()) {
                <td>
                  <input
                    type="checkbox"
                    [attr.aria-label]="'Select failed task ' + task.id"
                    [checked]="selected().has(task.id!)"
                    (change)="toggle(task.id!, $any($event.target).checked)"
                  />
                </td>
              }
              <td>#{{ task.id }} · {{ task.type }} #{{ task.task_id }}</td>
              <td>
                @if (task.scheduler_id) {
                  <a [routerLink]="['/schedulers', task.scheduler_id]"
                    >Scheduler #{{ task.scheduler_id }}</a
                  >
                }
              </td>
              <td>
                <span>{{ reason(task).reason }}</span>
                @if (reason(task).stack) {
                  <details>
                    <summary>Stack</summary>
                    <pre>{{ reason(task).stack }}</pre>
                  </details>
                }
                @if (task.params_scheduler) {
                  <br /><code>{{ task.params_scheduler }}</code>
                }
              </td>
              <td>{{ task.retry_count }}</td>
              <td><app-time [at]="task.failed_at" /></td>
              <td>
                {{ task.redrive_count ?? 0 }}×
                @if (task.redriven_at) {
                  <app-time [at]="task.redriven_at" />
                }
              </td>
              @if (session.canWrite()) {
                <td class="actions">
                  <button
                    type="button"
                    [attr.aria-label]="'Re-drive failed task ' + task.id"
                    (click)="edit(task)"
                  >
                    Re-drive
                  </button>
                </td>
              }
            </tr>
          } @empty {
            <tr>
              <td colspan="8" class="muted">No failed tasks.</td>
            </tr>
          }
        </tbody>
      </table>
    </div>
  `,
})
export class FailedTasksComponent {
  protected readonly session = inject(SessionService);
  private readonly api = inject(FailedTaskService);
  protected readonly tasks = signal<FailedTask[]>([]);
  protected readonly selected = signal(new Set<number>());
  protected readonly editing = signal<FailedTask | null>(null);
  protected readonly paramsText = signal('{}');
  protected readonly paramsError = signal<string | null>(null);
  protected readonly confirmingBulk = signal(false);
  protected readonly message = signal<string | null>(null);
  protected readonly error = signal<string | null>(null);
  private query = '';
  private searchTimer: ReturnType<typeof setTimeout> | undefined;

  constructor() {
    inBackground(this.load());
    pollWhileVisible(inject(DestroyRef), () => inBackground(this.load()));
  }

  protected reason(task: FailedTask): {reason: string; stack: string} {
    return splitReason(task.failed_reason);
  }

  protected setQuery(value: string): void {
    this.query = value.trim();
    clearTimeout(this.searchTimer);
    this.searchTimer = setTimeout(() => inBackground(this.load()), 250);
  }

  protected toggle(id: number, on: boolean): void {
    const next = new Set(this.selected());
    if (on) next.add(id);
    else next.delete(id);
    this.selected.set(next);
  }

  protected edit(task: FailedTask): void {
    let text = task.params_scheduler ?? '{}';
    try {
      text = JSON.stringify(JSON.parse(text), null, 2);
    } catch {
      // Shown as stored, for the operator to repair.
    }
    this.paramsText.set(text);
    this.paramsError.set(null);
    this.editing.set(task);
  }

  protected async redrive(event: Event, task: FailedTask): Promise<void> {
    event.preventDefault();
    let params: Record<string, unknown>;
    try {
      const value: unknown = JSON.parse(this.paramsText());
      if (!value || typeof value !== 'object' || Array.isArray(value)) {
        throw new Error('Parameters must be a JSON object');
      }
      params = value as Record<string, unknown>;
    } catch (error) {
      this.paramsError.set(`Not valid: ${(error as Error).message}`);
      return;
    }
    await this.act(async () => {
      const result = await firstValueFrom(
        this.api.redrive({id: task.id!, body: {params}}),
      );
      this.editing.set(null);
      return `Failed task #${task.id} re-driven as run #${result.execution_id}.`;
    });
  }

  protected async bulkRedrive(): Promise<void> {
    const ids = [...this.selected()];
    this.confirmingBulk.set(false);
    await this.act(async () => {
      const problems: string[] = [];
      for (const id of ids) {
        try {
          await firstValueFrom(this.api.redrive({id, body: {}}));
        } catch (error) {
          problems.push(`#${id}: ${errorMessage(error)}`);
        }
      }
      this.selected.set(new Set());
      const done = ids.length - problems.length;
      return `Re-drove ${done} of ${ids.length}.${problems.length ? ` Not done: ${problems.join('; ')}` : ''}`;
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
      this.tasks.set(
        await firstValueFrom(
          this.api.find({
            filter: {order: ['id DESC'], limit: 100},
            ...(this.query ? {q: this.query} : {}),
          }),
        ),
      );
    } catch (error) {
      this.error.set(errorMessage(error));
    }
  }
}
