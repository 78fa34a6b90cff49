import {
  ChangeDetectionStrategy,
  Component,
  computed,
  input,
} from '@angular/core';
import type {SchedulerExecution} from '@client/models/scheduler-execution';

const WIDTH = 600;
const HEIGHT = 120;

/** The last runs as bars: height = duration, colour = outcome (inline SVG). */
@Component({
  selector: 'app-run-chart',
  changeDetection: ChangeDetectionStrategy.OnPush,
  template: `
    <svg
      class="chart"
      [attr.viewBox]="'0 0 ' + width + ' ' + (height + 4)"
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
    </svg>
    <p class="legend">
      <span><span class="swatch swatch-succeeded"></span>succeeded</span>
      <span><span class="swatch swatch-failed"></span>failed</span>
      <span><span class="swatch swatch-other"></span>other</span>
      <span class="muted">{{ summary() }}</span>
    </p>
  `,
})
export class RunChartComponent {
  readonly runs = input<SchedulerExecution[]>([]);
  protected readonly width = WIDTH;
  protected readonly height = HEIGHT;

  protected readonly bars = computed(() => {
    const runs = [...this.runs()].reverse();
    const longest = Math.max(1, ...runs.map(run => run.duration_ms ?? 0));
    const step = WIDTH / Math.max(runs.length, 20);
    return runs.map((run, index) => {
      const h = Math.max(4, ((run.duration_ms ?? 0) / longest) * HEIGHT);
      const kind =
        run.status === 'succeeded' || run.status === 'failed'
          ? run.status
          : 'other';
      return {
        key: run.id ?? index,
        x: index * step + 1,
        y: HEIGHT - h + 2,
        w: Math.max(2, step - 2),
        h,
        kind,
        label: `Run #${run.id}: ${run.status}, ${run.duration_ms ?? '?'} ms`,
      };
    });
  });

  protected readonly summary = computed(() => {
    const runs = this.runs();
    const ok = runs.filter(run => run.status === 'succeeded').length;
    const failed = runs.filter(run => run.status === 'failed').length;
    return `Last ${runs.length} runs: ${ok} succeeded, ${failed} failed.`;
  });
}
