import {HttpErrorResponse} from '@angular/common/http';
import {
  ChangeDetectionStrategy,
  Component,
  DestroyRef,
  computed,
  inject,
  signal,
} from '@angular/core';
import type {ReadinessCheck} from '@client/models/readiness-check';
import type {RunsInHour} from '@client/models/runs-in-hour';
import {HealthService} from '@client/services/health.service';
import {SystemService} from '@client/services/system.service';
import {firstValueFrom} from 'rxjs';
import {errorMessage} from '../shared/api-error';
import {pollWhileVisible} from '../shared/polling';
import {ZonedTimeComponent} from '../shared/zoned-time.component';
import {RunsPerHourChartComponent} from './runs-per-hour-chart.component';
import {inBackground} from '../shared/in-background';

interface Unavailable {
  available: false;
  error?: string;
}
interface ProducerPart {
  last_tick_at: string | null;
  last_evaluated_slot: string | null;
  instances: Array<{container_id: string; last_claim_at: string}>;
}
interface QueuePart {
  name: string;
  messages: number;
  consumers: number;
}
interface StayAlivePart {
  schedulers: number;
  supervised: number;
  workers: Array<{id: number; description: string; supervised: boolean}>;
}
interface Status {
  producer?: ProducerPart | Unavailable;
  queues?: QueuePart[] | Unavailable;
  stay_alive?: StayAlivePart | Unavailable;
  failed_tasks?: {stored: number} | Unavailable;
}

function available<T>(part: T | Unavailable | undefined): T | null {
  return part && (part as Unavailable).available !== false ? (part as T) : null;
}

@Component({
  selector: 'app-system',
  changeDetection: ChangeDetectionStrategy.OnPush,
  imports: [ZonedTimeComponent, RunsPerHourChartComponent],
  template: `
    <h1>System</h1>
    @if (error(); as text) {
      <p class="error" role="alert">{{ text }}</p>
    }
    @if (noTaskConsumer()) {
      <p class="warning" role="alert">
        No consumer is attached to cron_scheduler: tasks wait in the queue until
        a worker (npm run start:worker) starts.
      </p>
    }
    <div class="cards">
      <section aria-labelledby="producer-heading">
        <h2 id="producer-heading">Producer</h2>
        @if (producer(); as p) {
          <p>
            Last tick: <app-time [at]="p.last_tick_at" />
            @if (lagSeconds() !== null) {
              <span [class]="lagSeconds()! > 120 ? 'status-failed' : 'muted'">
                ({{ lagSeconds() }} s ago)</span
              >
            }
          </p>
          <p>Last evaluated slot: <app-time [at]="p.last_evaluated_slot" /></p>
          <p>Instances that claimed runs in the last 5 minutes:</p>
          <ul>
            @for (instance of p.instances; track instance.container_id) {
              <li>
                <code>{{ instance.container_id }}</code>, last claim
                <app-time [at]="instance.last_claim_at" />
              </li>
            } @empty {
              <li class="muted">none</li>
            }
          </ul>
        } @else {
          <p class="error">{{ unavailable('producer') }}</p>
        }
      </section>
      <section aria-labelledby="readiness-heading">
        <h2 id="readiness-heading">Readiness</h2>
        <ul>
          @for (check of checks(); track check.name) {
            <li>
              {{ check.name }}:
              <span
                [class]="
                  check.status === 'up' ? 'status-succeeded' : 'status-failed'
                "
                >{{ check.status }}</span
              >
              @if (check.reason) {
                <span class="muted"> ({{ check.reason }})</span>
              }
            </li>
          } @empty {
            <li class="muted">unknown</li>
          }
        </ul>
        <p>
          Failed tasks stored:
          {{ failedStored() ?? unavailable('failed_tasks') }}
        </p>
      </section>
    </div>
    <section aria-labelledby="runs-per-hour-heading">
      <h2 id="runs-per-hour-heading">Runs per hour (last 24 hours)</h2>
      <app-runs-per-hour-chart [hours]="runsPerHour()" />
    </section>
    <section aria-labelledby="queues-heading">
      <h2 id="queues-heading">Queues</h2>
      @if (queues(); as list) {
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Queue</th>
                <th scope="col">Ready messages</th>
                <th scope="col">Consumers</th>
              </tr>
            </thead>
            <tbody>
              @for (queue of list; track queue.name) {
                <tr>
                  <td>
                    <code>{{ queue.name }}</code>
                  </td>
                  <td>{{ queue.messages }}</td>
                  <td>{{ queue.consumers }}</td>
                </tr>
              }
            </tbody>
          </table>
        </div>
      } @else {
        <p class="error">{{ unavailable('queues') }}</p>
      }
    </section>
    <section aria-labelledby="stay-alive-heading">
      <h2 id="stay-alive-heading">Stay-alive workers</h2>
      @if (stayAlive(); as s) {
        <p>{{ s.supervised }} of {{ s.schedulers }} supervised.</p>
        <ul>
          @for (worker of s.workers; track worker.id) {
            <li>
              #{{ worker.id }} {{ worker.description }}:
              <span
                [class]="
                  worker.supervised ? 'status-succeeded' : 'status-failed'
                "
                >{{ worker.supervised ? 'supervised' : 'not supervised' }}</span
              >
            </li>
          }
        </ul>
      } @else {
        <p class="error">{{ unavailable('stay_alive') }}</p>
      }
    </section>
  `,
})
export class SystemComponent {
  private readonly system = inject(SystemService);
  private readonly health = inject(HealthService);
  protected readonly status = signal<Status>({});
  protected readonly checks = signal<Array<ReadinessCheck & {name: string}>>(
    [],
  );
  protected readonly runsPerHour = signal<RunsInHour[]>([]);
  protected readonly error = signal<string | null>(null);
  private readonly now = signal(Date.now());

  protected readonly producer = computed(() =>
    available(this.status().producer),
  );
  protected readonly queues = computed(() => available(this.status().queues));
  protected readonly stayAlive = computed(() =>
    available(this.status().stay_alive),
  );
  protected readonly failedStored = computed(
    () => available(this.status().failed_tasks)?.stored ?? null,
  );
  protected readonly noTaskConsumer = computed(
    () =>
      this.queues()?.some(
        q => q.name === 'cron_scheduler' && q.consumers === 0,
      ) ?? false,
  );
  protected readonly lagSeconds = computed(() => {
    const tick = this.producer()?.last_tick_at;
    return tick
      ? Math.max(0, Math.round((this.now() - Date.parse(tick)) / 1000))
      : null;
  });

  constructor() {
    inBackground(this.load());
    pollWhileVisible(inject(DestroyRef), () => inBackground(this.load()));
  }

  protected unavailable(part: keyof Status): string {
    const value = this.status()[part] as Unavailable | undefined;
    return value?.error ? `Unavailable: ${value.error}` : 'Unavailable';
  }

  private async load(): Promise<void> {
    this.now.set(Date.now());
    try {
      this.status.set((await firstValueFrom(this.system.status())) as Status);
      this.error.set(null);
    } catch (error) {
      this.error.set(errorMessage(error));
    }
    try {
      this.runsPerHour.set(
        (await firstValueFrom(this.system.runsPerHour())).hours,
      );
    } catch (error) {
      this.error.set(errorMessage(error));
    }
    try {
      this.setChecks((await firstValueFrom(this.health.ready())).checks);
    } catch (error) {
      // Not ready is a 503 whose body still names each dependency.
      const body = error instanceof HttpErrorResponse ? error.error : null;
      if (body?.checks) this.setChecks(body.checks);
      else this.error.set(errorMessage(error));
    }
  }

  private setChecks(checks: Record<string, ReadinessCheck>): void {
    this.checks.set(
      Object.entries(checks).map(([name, check]) => ({name, ...check})),
    );
  }
}
