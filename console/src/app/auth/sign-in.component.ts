import {
  ChangeDetectionStrategy,
  Component,
  inject,
  signal,
} from '@angular/core';
import {ActivatedRoute, Router} from '@angular/router';
import {errorMessage} from '../shared/api-error';
import {SessionService} from './session.service';

@Component({
  selector: 'app-sign-in',
  changeDetection: ChangeDetectionStrategy.OnPush,
  template: `
    <h1>Sign in</h1>
    @if (session.notice(); as notice) {
      <p class="notice" role="status">{{ notice }}</p>
    }
    <form class="sign-in" (submit)="submit($event)">
      <label for="email">Email</label>
      <input
        id="email"
        name="email"
        type="email"
        autocomplete="username"
        required
        #email
      />
      <label for="password">Password</label>
      <input
        id="password"
        name="password"
        type="password"
        autocomplete="current-password"
        required
        #password
      />
      @if (error(); as message) {
        <p class="error" role="alert">{{ message }}</p>
      }
      <button type="submit" [disabled]="busy()">Sign in</button>
    </form>
  `,
})
export class SignInComponent {
  protected readonly session = inject(SessionService);
  private readonly router = inject(Router);
  private readonly route = inject(ActivatedRoute);
  protected readonly error = signal<string | null>(null);
  protected readonly busy = signal(false);

  protected async submit(event: Event): Promise<void> {
    event.preventDefault();
    const form = event.target as HTMLFormElement;
    const data = new FormData(form);
    this.busy.set(true);
    this.error.set(null);
    try {
      await this.session.signIn(
        String(data.get('email') ?? ''),
        String(data.get('password') ?? ''),
      );
      await this.router.navigateByUrl(
        inAppPath(this.route.snapshot.queryParamMap.get('next')),
      );
    } catch (error) {
      this.error.set(errorMessage(error));
    } finally {
      this.busy.set(false);
    }
  }
}

/** Where to go after signing in: a path of this app, never another origin. */
function inAppPath(next: string | null): string {
  return next &&
    next.startsWith('/') &&
    !next.startsWith('//') &&
    !next.startsWith('/\\') &&
    !next.startsWith('/sign-in')
    ? next
    : '/schedulers';
}
