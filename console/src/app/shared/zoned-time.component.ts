import {
  ChangeDetectionStrategy,
  Component,
  computed,
  input,
} from '@angular/core';
import {formatInZone} from './time-zones';

/** A moment in the viewer's zone; hovering shows it in the scheduler's zone. */
@Component({
  selector: 'app-time',
  changeDetection: ChangeDetectionStrategy.OnPush,
  template: `@if (at()) {
      <time [attr.datetime]="at()" [title]="hint()">{{ local() }}</time>
    } @else {
      <span>–</span>
    }`,
})
export class ZonedTimeComponent {
  readonly at = input<string | null | undefined>();
  /** The scheduler's zone, for the hover text. */
  readonly zone = input<string | null | undefined>();

  protected readonly local = computed(() => formatInZone(this.at() ?? ''));
  protected readonly hint = computed(() => {
    const at = this.at() ?? '';
    const zone = this.zone() ?? 'UTC';
    return `${formatInZone(at, zone)} in ${zone} (${at})`;
  });
}
