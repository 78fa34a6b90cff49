import {ChangeDetectionStrategy, Component, input, output} from '@angular/core';

/** Previous and next buttons around the page number of a paged table. */
@Component({
  selector: 'app-pager',
  changeDetection: ChangeDetectionStrategy.OnPush,
  template: `
    <div class="pager">
      <button
        type="button"
        class="secondary"
        [disabled]="page() === 0"
        (click)="pageChange.emit(page() - 1)"
      >
        {{ previousLabel() }}
      </button>
      <span>Page {{ page() + 1 }}</span>
      <button
        type="button"
        class="secondary"
        [disabled]="!hasMore()"
        (click)="pageChange.emit(page() + 1)"
      >
        {{ nextLabel() }}
      </button>
    </div>
  `,
})
export class PagerComponent {
  /** Zero-based. */
  readonly page = input.required<number>();
  /** Whether the current page was full, so another may follow. */
  readonly hasMore = input.required<boolean>();
  readonly previousLabel = input('Previous page');
  readonly nextLabel = input('Next page');
  readonly pageChange = output<number>();
}
