import {ADMINS, EVERYONE, OPERATORS} from '../auth/roles';
import {CrudResource, defineResource} from '../crud/crud-resource';
import {
  Calendar,
  Config,
  FailedTask,
  Group,
  HttpTarget,
  Language,
  Notification,
  Reminder,
  Report,
  Scheduler,
  SchedulerExecution,
  AuditEvent,
  Ticket,
  User,
  Webhook,
  Worker,
} from '../models';
import {calendarHooks} from './calendar.hooks';
import {httpTargetHooks} from './http-target.hooks';
import {HTTP_TARGET_SECRET_FIELD} from './http-target-fields';
import {refuseWhileScheduled} from './in-use.hooks';
import {schedulerHooks} from './scheduler.hooks';
import {ticketHooks} from './ticket.hooks';
import {PASSWORD_FIELD, userHooks} from './user.hooks';
import {webhookHooks} from './webhook.hooks';
import {workerHooks} from './worker.hooks';

const OPERATED = {
  read: EVERYONE,
  create: OPERATORS,
  update: OPERATORS,
  delete: OPERATORS,
};
const ADMINISTERED = {
  read: EVERYONE,
  create: ADMINS,
  update: ADMINS,
  delete: ADMINS,
};

/**
 * Every REST resource, one entry each: model, path, who may do what, and the
 * resource's own rules. Adding a resource is a model plus one entry here.
 */
export const RESOURCES: CrudResource[] = [
  defineResource({
    model: Scheduler,
    path: '/schedulers',
    access: OPERATED,
    serverOwned: ['user_id', 'activated_at', 'status_reason', 'search_text'],
    searchColumn: 'search_text',
    createExtras: {
      user_id_created: {
        schema: {
          type: 'integer',
          minimum: 1,
          maximum: 2147483647,
          nullable: true,
          description:
            'Owner, stored as user_id; defaults to the caller (admins may name another user)',
        },
      },
    },
    hooks: schedulerHooks,
  }),
  defineResource({
    model: FailedTask,
    path: '/failed-tasks',
    access: {read: EVERYONE},
    searchColumn: 'search_text',
    // An operator looks for the latest failures: beyond the page limit the
    // oldest would otherwise hide them.
    defaultOrder: ['id DESC'],
    notes: {
      find: 'Newest first (the order they were stored) unless the filter gives an order.',
    },
  }),
  defineResource({
    model: SchedulerExecution,
    path: '/scheduler-executions',
    access: {read: EVERYONE},
  }),
  defineResource({
    model: AuditEvent,
    path: '/audit-events',
    access: {read: OPERATORS},
    defaultOrder: ['at DESC', 'id DESC'],
    notes: {
      find: 'Newest first unless the filter gives an order. Written by the service only: sign-ins, sign-outs, revocations and password changes (more kinds as they are audited).',
    },
  }),
  defineResource({
    model: Report,
    path: '/reports',
    access: ADMINISTERED,
    hooks: {beforeDelete: refuseWhileScheduled('report_id')},
  }),
  defineResource({
    model: Worker,
    path: '/workers',
    access: ADMINISTERED,
    hooks: workerHooks,
  }),
  defineResource({
    model: Reminder,
    path: '/reminders',
    access: OPERATED,
    hooks: {beforeDelete: refuseWhileScheduled('reminder_id')},
  }),
  defineResource({
    model: HttpTarget,
    path: '/http-targets',
    // Created by HttpTargetSecretController: the answer shows the signing secret once.
    access: {read: EVERYONE, update: OPERATORS, delete: OPERATORS},
    serverOwned: [
      'secret_header_names',
      'previous_secret_expires_at',
      'secret_rotated_at',
    ],
    createExtras: HTTP_TARGET_SECRET_FIELD,
    updateExtras: HTTP_TARGET_SECRET_FIELD,
    hooks: httpTargetHooks,
    notes: {
      updateById:
        'secret_headers, when given, replaces every write-only header; credential headers in headers are moved there.',
      deleteById: '422 while a scheduler still calls it.',
    },
  }),
  defineResource({
    model: Webhook,
    path: '/webhooks',
    // Created by WebhookController: the answer shows the signing secret once.
    access: {read: OPERATORS, update: OPERATORS, delete: OPERATORS},
    serverOwned: [
      'user_id',
      'disabled_at',
      'disabled_reason',
      'consecutive_failures',
      'previous_secret_expires_at',
      'secret_rotated_at',
    ],
    hooks: webhookHooks,
    notes: {
      find: 'Admins see every webhook; operators only their own.',
      findById: 'Operators reach only their own (404 otherwise).',
      updateById:
        'Operators reach only their own (404 otherwise) and name only schedulers they own. active: true re-enables a disabled endpoint.',
      deleteById: 'Operators reach only their own (404 otherwise).',
    },
  }),
  defineResource({
    model: User,
    path: '/users',
    access: {read: ADMINS, create: ADMINS, update: ADMINS, delete: ADMINS},
    createExtras: {password: {...PASSWORD_FIELD.password, required: true}},
    updateExtras: PASSWORD_FIELD,
    hooks: userHooks,
  }),
  defineResource({model: Group, path: '/groups', access: ADMINISTERED}),
  defineResource({model: Language, path: '/languages', access: ADMINISTERED}),
  defineResource({
    model: Ticket,
    path: '/tickets',
    access: OPERATED,
    serverOwned: ['user_id'],
    hooks: ticketHooks,
    notes: {
      create: 'The caller becomes the owner (user_id).',
      updateById: 'Only the owner or an admin; anyone else gets 403.',
      deleteById: 'Only the owner or an admin; anyone else gets 403.',
    },
  }),
  defineResource({model: Config, path: '/config', access: ADMINISTERED}),
  defineResource({
    model: Calendar,
    path: '/calendars',
    access: OPERATED,
    hooks: calendarHooks,
    deleteConflict:
      'Schedulers still name the calendar in calendar_ids: error.details[0].info.scheduler_ids lists them',
    notes: {
      create:
        'dates are stored sorted, each once. A zone, date or cron expression that cannot be read is a 422 naming it (e.g. /dates/3).',
      deleteById:
        'Refused with 409 while a scheduler names the calendar in calendar_ids.',
    },
  }),
  defineResource({
    model: Notification,
    path: '/notifications',
    // Everyone reads and marks their own; only admins create them by hand.
    access: {
      read: EVERYONE,
      create: ADMINS,
      update: EVERYONE,
      delete: EVERYONE,
    },
    updatable: ['read_at'],
    notes: {
      find: 'Non-admins see only their own notifications.',
      updateById:
        'Only read_at may change; non-admins reach only their own (404 otherwise).',
      deleteById: 'Non-admins reach only their own (404 otherwise).',
    },
    hooks: {
      scope: user => (user.role === 'admin' ? undefined : {user_id: user.id}),
    },
  }),
];
