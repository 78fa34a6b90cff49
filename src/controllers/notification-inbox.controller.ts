import {authenticate} from '@loopback/authentication';
import {authorize} from '@loopback/authorization';
import {inject} from '@loopback/core';
import {get, oas, post} from '@loopback/rest';
import {SecurityBindings} from '@loopback/security';
import {BEARER_STRATEGIES} from '../auth/bearer-strategies';
import type {CurrentUser} from '../auth/current-user';
import {EVERYONE} from '../auth/roles';
import type {EntityRepository} from '../crud/repositories';
import {repositorySql} from '../database/repository-sql';
import type {Notification} from '../models';

export interface UnreadCount {
  unread: number;
}

export interface MarkedRead {
  marked: number;
}

/**
 * The caller's own inbox, whatever the role: the console's unread badge and
 * "mark all read". An admin's GET /notifications lists everyone's, so these
 * two are always scoped to the signed-in user.
 */
@oas.tags('Notification')
@authenticate(...BEARER_STRATEGIES)
@authorize({allowedRoles: EVERYONE})
export class NotificationInboxController {
  constructor(
    @inject(SecurityBindings.USER) private readonly user: CurrentUser,
    @inject('repositories.NotificationRepository')
    private readonly notifications: EntityRepository<Notification>,
  ) {}

  @get('/notifications/unread-count', {
    summary: 'Count my unread notifications',
    description:
      'How many of the signed-in user’s own notifications have no read_at (200). Any role.',
    responses: {
      '200': {
        description: 'The unread count',
        content: {
          'application/json': {
            schema: {
              type: 'object',
              title: 'UnreadCount',
              additionalProperties: false,
              required: ['unread'],
              properties: {unread: {type: 'integer', minimum: 0}},
            },
          },
        },
      },
    },
  })
  async unreadCount(): Promise<UnreadCount> {
    const [row] = (await repositorySql(this.notifications)(
      `SELECT count(*)::int AS unread FROM notification
        WHERE user_id = $1 AND read_at IS NULL`,
      [this.user.id],
    )) as Array<{unread: number}>;
    return {unread: row.unread};
  }

  @post('/notifications/read-all', {
    summary: 'Mark all my notifications read',
    description:
      'Sets read_at on every unread notification of the signed-in user (200, with how many). Any role; never touches another user’s.',
    responses: {
      '200': {
        description: 'How many notifications were marked read',
        content: {
          'application/json': {
            schema: {
              type: 'object',
              title: 'MarkedRead',
              additionalProperties: false,
              required: ['marked'],
              properties: {marked: {type: 'integer', minimum: 0}},
            },
          },
        },
      },
    },
  })
  async readAll(): Promise<MarkedRead> {
    const [row] = (await repositorySql(this.notifications)(
      `WITH marked AS (
         UPDATE notification SET read_at = now()
          WHERE user_id = $1 AND read_at IS NULL
         RETURNING 1
       )
       SELECT count(*)::int AS marked FROM marked`,
      [this.user.id],
    )) as Array<{marked: number}>;
    return {marked: row.marked};
  }
}
