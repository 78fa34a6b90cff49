import {Routes} from '@angular/router';
import {canWrite, signedIn} from './auth/signed-in.guard';

/** One URL per view; each view is its own lazily loaded chunk. */
export const routes: Routes = [
  {path: '', pathMatch: 'full', redirectTo: 'schedulers'},
  {
    path: 'sign-in',
    title: 'Sign in · Task Scheduler',
    loadComponent: () =>
      import('./auth/sign-in.component').then(m => m.SignInComponent),
  },
  {
    path: '',
    canActivateChild: [signedIn],
    children: [
      {
        path: 'schedulers',
        title: 'Schedulers · Task Scheduler',
        loadComponent: () =>
          import('./schedulers/scheduler-list.component').then(
            m => m.SchedulerListComponent,
          ),
      },
      {
        path: 'schedulers/new',
        canActivate: [canWrite],
        title: 'New scheduler · Task Scheduler',
        loadComponent: () =>
          import('./schedulers/scheduler-editor.component').then(
            m => m.SchedulerEditorComponent,
          ),
      },
      {
        path: 'schedulers/:id/edit',
        canActivate: [canWrite],
        title: 'Edit scheduler · Task Scheduler',
        loadComponent: () =>
          import('./schedulers/scheduler-editor.component').then(
            m => m.SchedulerEditorComponent,
          ),
      },
      {
        path: 'schedulers/:id',
        title: 'Scheduler · Task Scheduler',
        loadComponent: () =>
          import('./schedulers/scheduler-detail.component').then(
            m => m.SchedulerDetailComponent,
          ),
      },
      {
        path: 'calendars',
        title: 'Calendars · Task Scheduler',
        loadComponent: () =>
          import('./calendars/calendar-list.component').then(
            m => m.CalendarListComponent,
          ),
      },
      {
        path: 'calendars/new',
        canActivate: [canWrite],
        title: 'New calendar · Task Scheduler',
        loadComponent: () =>
          import('./calendars/calendar-editor.component').then(
            m => m.CalendarEditorComponent,
          ),
      },
      {
        path: 'calendars/:id/edit',
        canActivate: [canWrite],
        title: 'Edit calendar · Task Scheduler',
        loadComponent: () =>
          import('./calendars/calendar-editor.component').then(
            m => m.CalendarEditorComponent,
          ),
      },
      {
        path: 'notices',
        title: 'Notices · Task Scheduler',
        loadComponent: () =>
          import('./notices/notices.component').then(m => m.NoticesComponent),
      },
      {
        path: 'failed-tasks',
        title: 'Failed tasks · Task Scheduler',
        loadComponent: () =>
          import('./failed-tasks/failed-tasks.component').then(
            m => m.FailedTasksComponent,
          ),
      },
      {
        path: 'system',
        title: 'System · Task Scheduler',
        loadComponent: () =>
          import('./system/system.component').then(m => m.SystemComponent),
      },
      {
        path: 'audit',
        title: 'Audit · Task Scheduler',
        loadComponent: () =>
          import('./audit/audit.component').then(m => m.AuditComponent),
      },
      {
        path: 'http-targets',
        title: 'HTTP targets · Task Scheduler',
        loadComponent: () =>
          import('./integrations/http-targets.component').then(
            m => m.HttpTargetsComponent,
          ),
      },
      {
        path: 'webhooks',
        canActivate: [canWrite],
        title: 'Webhooks · Task Scheduler',
        loadComponent: () =>
          import('./integrations/webhooks.component').then(
            m => m.WebhooksComponent,
          ),
      },
      {
        path: 'api-keys',
        title: 'API keys · Task Scheduler',
        loadComponent: () =>
          import('./integrations/api-keys.component').then(
            m => m.ApiKeysComponent,
          ),
      },
      {
        path: '**',
        title: 'Not found · Task Scheduler',
        loadComponent: () =>
          import('./shared/not-found.component').then(m => m.NotFoundComponent),
      },
    ],
  },
];
