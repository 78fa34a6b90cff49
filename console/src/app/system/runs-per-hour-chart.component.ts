import {
  ChangeDetectionStrategy,
  Component,
  computed,
  input,
} from '@angular/core';
import type {RunsInHour} from '@client/models/runs-in-hour';
import {formatInZone} from '../shared/time-zones';

const WIDTH = 720;
const HEIGHT = 140;
const OUTCOMES = ['succeeded', 'failed', 'other'] as const;

/** Runs per hour, stacked by outcome (inline SVG, no chart library). */
@Component({
  selector: 'app-runs-per-hour-chart',
  changeDetection: ChangeDetectionStrategy.OnPush,
  template: `
    <svg
      class="chart"
      [attr.viewBox]="'0 0 ' + width + ' ' + (height + 18)"
      role="img"
      [attr.aria-label]="summary()"
    >
      @for (bar of bars(); track bar.key) {
        <rect
          [attr.x]="bar.x"
          [attr.y]="bar.y"
          [attr.width]="bar.w"
          [attr.height]="bar.h"
          [attr.class]="'bar-' + bar.kind"
        >
          <title>{{ bar.label }}</title>
        </rect>
      }
      @for (tick of ticks(); track tick.x) {
        <text [attr.x]="tick.x" [attr.y]="height + 14" font-size="11">
          {{ tick.label }}
        </text>
      }
    </svg>
    <p class="legend">
      <span><span class="swatch swatch-succeeded"></span>succeeded</span>
      <span><span class="swatch swatch-failed"></span>failed</span>
      <span><span class="swatch swatch-other"></span>other</span>
      <span class="muted">{{ summary() }}</span>
    </p>
  `,
})
export class RunsPerHourChartComponent {
  readonly hours = input<RunsInHour[]>([]);
  protected readonly width = WIDTH;
  protected readonly height = HEIGHT;

  private readonly step = computed(
    () => WIDTH / Math.max(this.hours().length, 1),
  );

  protected readonly bars = computed(() => {
    const hours = this.hours();
    const busiest = Math.max(
      1,
      ...hours.map(h => h.succeeded + h.failed + h.other),
    );
    const step = this.step();
    return hours.flatMap((hour, index) => {
      let top = HEIGHT;
      return OUTCOMES.filter(kind => hour[kind] > 0).map(kind => {
        const h = (hour[kind] / busiest) * HEIGHT;
        top -= h;
        return {
          key: `${hour.hour}-${kind}`,
          x: index * step + 1,
          y: top,
          w: Math.max(2, step - 2),
          h,
          kind,
          label: `${formatInZone(hour.hour)}: ${hour[kind]} ${kind}`,
        };
      });
    });
  });

  protected readonly ticks = computed(() =>
    this.hours()
      .map((hour, index) => ({hour, index}))
      .filter(({index}) => index % 6 === 0)
      .map(({hour, index}) => ({
        x: index * this.step() + 1,
        label: new Intl.DateTimeFormat(undefined, {
          hour: '2-digit',
          minute: '2-digit',
        }).format(new Date(hour.hour)),
      })),
  );

  protected readonly summary = computed(() => {
    const total = (kind: (typeof OUTCOMES)[number]) =>
      this.hours().reduce((sum, hour) => sum + hour[kind], 0);
    return `Last 24 hours: ${total('succeeded')} succeeded, ${total('failed')} failed, ${total('other')} other.`;
  });
}
