import {Injectable, inject, signal} from '@angular/core';
import {NotificationService} from '@client/services/notification.service';
import {firstValueFrom} from 'rxjs';

/**
 * The signed-in user's unread notice count, shown in the navigation: the
 * frame polls it, the notices view refreshes it after marking some read.
 */
@Injectable({providedIn: 'root'})
export class UnreadNoticesService {
  private readonly api = inject(NotificationService);
  readonly count = signal(0);

  async refresh(): Promise<void> {
    try {
      const {unread} = await firstValueFrom(this.api.unreadCount());
      this.count.set(unread);
    } catch {
      // The badge keeps its last count; the views show their own errors.
    }
  }
}
