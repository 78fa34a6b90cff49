import {ChangeDetectionStrategy, Component} from '@angular/core';
import {RouterLink} from '@angular/router';

@Component({
  selector: 'app-not-found',
  changeDetection: ChangeDetectionStrategy.OnPush,
  imports: [RouterLink],
  template: `<h1>Page not found</h1>
    <p>
      No view lives at this address. Go to the
      <a routerLink="/schedulers">schedulers</a>.
    </p>`,
})
export class NotFoundComponent {}
