import {
  ChangeDetectionStrategy,
  Component,
  DestroyRef,
  effect,
  inject,
} from '@angular/core';
import {RouterLink, RouterLinkActive, RouterOutlet} from '@angular/router';
import {SessionService} from './auth/session.service';
import {UnreadNoticesService} from './notices/unread-notices.service';
import {inBackground} from './shared/in-background';
import {pollWhileVisible} from './shared/polling';

/** The frame: skip link, navigation (once signed in) and the routed view. */
@Component({
  selector: 'app-root',
  changeDetection: ChangeDetectionStrategy.OnPush,
  imports: [RouterOutlet, RouterLink, RouterLinkActive],
  template: `
    <a class="skip-link" href="#main">Skip to content</a>
    <header class="top-bar">
      <span class="brand">Task Scheduler</span>
      @if (session.user(); as user) {
        <nav aria-label="Main">
          <ul>
            <li>
              <a routerLink="/schedulers" routerLinkActive="active"
                >Schedulers</a
              >
            </li>
            <li>
              <a routerLink="/calendars" routerLinkActive="active">Calendars</a>
            </li>
            <li>
              <a routerLink="/failed-tasks" routerLinkActive="active"
                >Failed tasks</a
              >
            </li>
            <li>
              <a
                routerLink="/notices"
                routerLinkActive="active"
                data-testid="notices-link"
                >Notices
                @if (unread.count() > 0) {
                  <span class="badge">{{ unread.count() }}</span><span
                    class="sr-only"
                  >
                    unread</span
                  >
                }
              </a>
            </li>
            <li>
              <a routerLink="/system" routerLinkActive="active">System</a>
            </li>
            <li>
              <a routerLink="/http-targets" routerLinkActive="active"
                >HTTP targets</a
              >
            </li>
            @if (session.canWrite()) {
              <!-- /webhooks is admin and operator only (a viewer gets 403). -->
              <li>
                <a routerLink="/webhooks" routerLinkActive="active">Webhooks</a>
              </li>
            }
            <li>
              <a routerLink="/api-keys" routerLinkActive="active">API keys</a>
            </li>
            @if (session.canWrite()) {
              <!-- GET /audit-events is admin and operator only (a viewer gets 403). -->
              <li>
                <a routerLink="/audit" routerLinkActive="active">Audit</a>
              </li>
            }
            <li><a href="/api/explorer/">API explorer</a></li>
          </ul>
        </nav>
        <div class="who">
          <span>{{ user.email }} ({{ user.role }})</span>
          <button type="button" class="secondary" (click)="signOut()">
            Sign out
          </button>
        </div>
      } @else {
        <nav aria-label="Main">
          <ul>
            <li><a href="/api/explorer/">API explorer</a></li>
          </ul>
        </nav>
      }
    </header>
    <main id="main" tabindex="-1">
      <router-outlet />
    </main>
  `,
})
export class AppComponent {
  protected readonly session = inject(SessionService);
  protected readonly unread = inject(UnreadNoticesService);

  constructor() {
    // The unread badge: at sign-in, then with every poll while signed in.
    effect(() => {
      if (this.session.user()) inBackground(this.unread.refresh());
      else this.unread.count.set(0);
    });
    pollWhileVisible(inject(DestroyRef), () => {
      if (this.session.user()) inBackground(this.unread.refresh());
    });
  }

  protected signOut(): void {
    this.session.signOut();
  }
}
