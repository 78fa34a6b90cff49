import {authenticate} from '@loopback/authentication';
import {BEARER_STRATEGIES} from '../auth/bearer-strategies';
import {authorize} from '@loopback/authorization';
import {Context, inject} from '@loopback/core';
import {
  oas,
  post,
  Request,
  requestBody,
  Response,
  RestBindings,
} from '@loopback/rest';
import {SecurityBindings} from '@loopback/security';
import {MAX_REASON_LENGTH} from '../audit/audit-event';
import type {CurrentUser} from '../auth/current-user';
import {OPERATORS} from '../auth/roles';
import type {AppConfig} from '../config';
import {auditedWrite, visible} from '../crud/audited-write';
import type {EntityRepository} from '../crud/repositories';
import {AppBindings, ProducerBindings} from '../keys';
import {toHttpError} from '../middleware/error-mapping';
import {Calendar, Scheduler} from '../models';
import {BrokerService} from '../queue/broker.service';
import {schedulerHooks} from '../resources/scheduler.hooks';
import {changeReason, SchedulerRunController} from './scheduler-run.controller';

export const MAX_BULK_IDS = 1000;
const BULK_ACTIONS = ['pause', 'resume', 'run', 'delete'] as const;
type BulkAction = (typeof BULK_ACTIONS)[number];

export interface BulkItemResult {
  id: number;
  /** The HTTP status this item alone would have answered. */
  status: number;
  error?: string;
}

/** POST /schedulers/bulk: one action on many schedulers, each judged alone. */
@oas.tags('Scheduler')
@authenticate(...BEARER_STRATEGIES)
export class SchedulerBulkController {
  constructor(
    @inject('repositories.SchedulerRepository')
    private readonly schedulers: EntityRepository<Scheduler>,
    @inject('services.BrokerService') private readonly broker: BrokerService,
    @inject(SecurityBindings.USER) private readonly user: CurrentUser,
    @inject(AppBindings.CONFIG) private readonly config: AppConfig,
    @inject(RestBindings.Http.REQUEST) private readonly request: Request,
    @inject(RestBindings.Http.RESPONSE) private readonly response: Response,
    @inject.context() private readonly context: Context,
  ) {}

  @post('/schedulers/bulk', {
    summary: 'Pause, resume, run or delete many schedulers',
    description: `Applies one action to up to ${MAX_BULK_IDS} schedulers, each as its own request would (same rules, same audit event with the X-Change-Reason or body reason): 200 with one result per id in the order given, each with the HTTP status that item answered (200 paused or resumed, 202 run, 204 deleted, or its error). Roles: admin, operator.`,
    responses: {
      '200': {
        description: 'One result per id',
        content: {
          'application/json': {
            schema: {
              type: 'object',
              title: 'BulkResult',
              required: ['results'],
              properties: {
                results: {
                  type: 'array',
                  items: {
                    type: 'object',
                    title: 'BulkItemResult',
                    required: ['id', 'status'],
                    properties: {
                      id: {type: 'integer'},
                      status: {type: 'integer'},
                      error: {type: 'string'},
                    },
                  },
                },
              },
            },
          },
        },
      },
    },
  })
  @authorize({allowedRoles: OPERATORS})
  async bulk(
    @requestBody({
      required: true,
      content: {
        'application/json': {
          schema: {
            type: 'object',
            title: 'BulkRequest',
            additionalProperties: false,
            required: ['action', 'ids'],
            properties: {
              action: {type: 'string', enum: [...BULK_ACTIONS]},
              ids: {
                type: 'array',
                minItems: 1,
                maxItems: MAX_BULK_IDS,
                // Each once: 1,000 copies of one id were 1,000 runs.
                uniqueItems: true,
                items: {type: 'integer', minimum: 1, maximum: 2147483647},
              },
              reason: {type: 'string', maxLength: MAX_REASON_LENGTH},
            },
          },
        },
      },
    })
    body: {
      action: BulkAction;
      ids: number[];
      reason?: string;
    },
  ): Promise<{results: BulkItemResult[]}> {
    const reason = changeReason(this.request, body.reason);
    const results: BulkItemResult[] = [];
    for (const id of body.ids) {
      try {
        results.push({id, status: await this.apply(body.action, id, reason)});
      } catch (error) {
        const answer = toHttpError(error);
        results.push({id, status: answer.statusCode, error: answer.message});
      }
    }
    return {results};
  }

  private async apply(
    action: BulkAction,
    id: number,
    reason: string | undefined,
  ): Promise<number> {
    if (action === 'run') {
      await (await this.runner()).runNow(id, {reason});
      return 202;
    }
    const current = await this.schedulers.findById(id);
    const event = {
      actorUserId: this.user.id,
      entity: 'scheduler',
      request: this.request,
      reason,
    };
    if (action === 'delete') {
      await auditedWrite(
        this.schedulers,
        {...event, action: 'delete'},
        async options => {
          await this.schedulers.deleteById(id, options);
          return {id, before: visible(current), after: {}, result: undefined};
        },
      );
      return 204;
    }
    const patch = await schedulerHooks.beforeUpdate!(
      {status: action === 'resume'},
      current,
      {user: this.user, context: this.context},
    );
    await auditedWrite(
      this.schedulers,
      {...event, action: 'update'},
      async options => {
        await this.schedulers.updateById(id, patch, options);
        const updated = await this.schedulers.findById(id, undefined, options);
        return {
          id,
          before: visible(current),
          after: visible(updated),
          result: undefined,
        };
      },
    );
    return 200;
  }

  private async runner(): Promise<SchedulerRunController> {
    return new SchedulerRunController(
      this.schedulers,
      this.broker,
      this.user,
      this.config,
      this.request,
      this.response,
      await this.context.get<EntityRepository<Calendar>>(
        'repositories.CalendarRepository',
      ),
      (await this.context.get(ProducerBindings.CLOCK, {optional: true})) ??
        (() => new Date()),
    );
  }
}
