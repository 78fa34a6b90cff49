import {
  ChangeDetectionStrategy,
  Component,
  DestroyRef,
  inject,
  signal,
} from '@angular/core';
import type {Notification} from '@client/models/notification';
import {NotificationService} from '@client/services/notification.service';
import {firstValueFrom} from 'rxjs';
import {SessionService} from '../auth/session.service';
import {errorMessage} from '../shared/api-error';
import {inBackground} from '../shared/in-background';
import {PagerComponent} from '../shared/pager.component';
import {pollWhileVisible} from '../shared/polling';
import {ZonedTimeComponent} from '../shared/zoned-time.component';
import {UnreadNoticesService} from './unread-notices.service';

const PAGE_SIZE = 50;

/** The signed-in user's own notices, newest first, to read and mark read. */
@Component({
  selector: 'app-notices',
  changeDetection: ChangeDetectionStrategy.OnPush,
  imports: [ZonedTimeComponent, PagerComponent],
  template: `
    <h1>Notices</h1>
    <div class="toolbar">
      <p>{{ unread.count() }} unread</p>
      <button
        type="button"
        class="secondary"
        [disabled]="unread.count() === 0"
        (click)="markAllRead()"
      >
        Mark all read
      </button>
    </div>
    @if (error(); as text) {
      <p class="error" role="alert">{{ text }}</p>
    }
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Notice</th>
            <th scope="col">Read</th>
          </tr>
        </thead>
        <tbody>
          @for (notice of notices(); track notice.id) {
            <tr [class.unread]="!notice.read_at">
              <td><app-time [at]="notice.created_at" /></td>
              <td>
                <strong>{{ notice.title }}</strong>
                @if (notice.body) {
                  <p>{{ notice.body }}</p>
                }
              </td>
              <td>
                @if (notice.read_at) {
                  <app-time [at]="notice.read_at" />
                } @else {
                  <button
                    type="button"
                    [attr.aria-label]="'Mark read: ' + notice.title"
                    (click)="markRead(notice)"
                  >
                    Mark read
                  </button>
                }
              </td>
            </tr>
          } @empty {
            <tr>
              <td colspan="3" class="muted">No notices.</td>
            </tr>
          }
        </tbody>
      </table>
    </div>
    <app-pager
      [page]="page()"
      [hasMore]="notices().length >= pageSize"
      previousLabel="Newer notices"
      nextLabel="Older notices"
      (pageChange)="goTo($event)"
    />
  `,
})
export class NoticesComponent {
  private readonly api = inject(NotificationService);
  private readonly session = inject(SessionService);
  protected readonly unread = inject(UnreadNoticesService);
  protected readonly pageSize = PAGE_SIZE;
  protected readonly notices = signal<Notification[]>([]);
  protected readonly page = signal(0);
  protected readonly error = signal<string | null>(null);

  constructor() {
    inBackground(this.load());
    pollWhileVisible(inject(DestroyRef), () => inBackground(this.load()));
  }

  protected goTo(page: number): void {
    this.page.set(Math.max(0, page));
    inBackground(this.load());
  }

  protected async markRead(notice: Notification): Promise<void> {
    await this.act(() =>
      firstValueFrom(
        this.api.updateById({
          id: notice.id!,
          body: {read_at: new Date().toISOString()},
        }),
      ),
    );
  }

  protected async markAllRead(): Promise<void> {
    await this.act(() => firstValueFrom(this.api.readAll()));
  }

  private async act(work: () => Promise<unknown>): Promise<void> {
    this.error.set(null);
    try {
      await work();
    } catch (error) {
      this.error.set(errorMessage(error));
    }
    await this.load();
  }

  private async load(): Promise<void> {
    const me = this.session.user();
    if (!me) return;
    try {
      // An admin may list everyone's: this view is always the caller's own.
      const [notices] = await Promise.all([
        firstValueFrom(
          this.api.find({
            filter: {
              where: {user_id: me.id},
              order: ['id DESC'],
              limit: PAGE_SIZE,
              skip: this.page() * PAGE_SIZE,
            },
          }),
        ),
        this.unread.refresh(),
      ]);
      this.notices.set(notices);
      this.error.set(null);
    } catch (error) {
      this.error.set(errorMessage(error));
    }
  }
}
