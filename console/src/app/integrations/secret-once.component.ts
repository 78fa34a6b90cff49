import {ChangeDetectionStrategy, Component, input, output} from '@angular/core';

/**
 * A secret the API shows once (a signing secret, an API key): shown in a
 * read-only field to copy, with a button that hides it for good. It lives
 * only in this view's memory: never stored, never in the URL.
 */
@Component({
  selector: 'app-secret-once',
  changeDetection: ChangeDetectionStrategy.OnPush,
  template: `
    <div class="panel" role="region" [attr.aria-label]="label()">
      <p class="notice" role="status">
        {{ label() }}: copy it now, it is not shown again.
      </p>
      <label [attr.for]="fieldId()">{{ label() }}</label>
      <input
        [id]="fieldId()"
        class="secret"
        type="text"
        readonly
        [value]="secret()"
        (focus)="$any($event.target).select()"
      />
      <button type="button" class="secondary" (click)="dismissed.emit()">
        I have stored it
      </button>
    </div>
  `,
})
export class SecretOnceComponent {
  readonly label = input.required<string>();
  readonly secret = input.required<string>();
  readonly fieldId = input('shown-secret');
  readonly dismissed = output<void>();
}
