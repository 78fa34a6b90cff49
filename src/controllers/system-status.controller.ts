import {authenticate} from '@loopback/authentication';
import {BEARER_STRATEGIES} from '../auth/bearer-strategies';
import {authorize} from '@loopback/authorization';
import {inject} from '@loopback/core';
import {get, oas} from '@loopback/rest';
import {EVERYONE} from '../auth/roles';
import type {AppConfig} from '../config';
import type {EntityRepository} from '../crud/repositories';
import {repositorySql} from '../database/repository-sql';
import {AppBindings} from '../keys';
import {Scheduler} from '../models';
import {BrokerService} from '../queue/broker.service';
import {brokerTopology, retrySettings} from '../queue/topology';
import {STAY_ALIVE_LOCK_SPACE} from '../stay-alive/scheduler-locks';

/** Each part answers within this, or is reported unavailable. */
export const PART_TIMEOUT_MS = 800;

type Part<T> = T | {available: false; error: string};

/** A part of the status, or why it is missing: never longer than PART_TIMEOUT_MS. */
async function part<T>(read: () => Promise<T>): Promise<Part<T>> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      read(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no answer within ${PART_TIMEOUT_MS} ms`)),
          PART_TIMEOUT_MS,
        );
      }),
    ]);
  } catch (error) {
    return {available: false, error: (error as Error).message};
  } finally {
    clearTimeout(timer);
  }
}

const UNAVAILABLE = {
  type: 'object',
  properties: {available: {type: 'boolean'}, error: {type: 'string'}},
};

/** GET /system/status: what runs, what waits, what failed. */
@oas.tags('System')
@authenticate(...BEARER_STRATEGIES)
@authorize({allowedRoles: EVERYONE})
export class SystemStatusController {
  constructor(
    @inject('repositories.SchedulerRepository')
    private readonly schedulers: EntityRepository<Scheduler>,
    @inject('services.BrokerService') private readonly broker: BrokerService,
    @inject(AppBindings.CONFIG) private readonly config: AppConfig,
  ) {}

  @get('/system/status', {
    summary: 'The system at a glance',
    description: `The producer (last tick, last evaluated slot, the instances that claimed runs in the last 5 minutes), each queue of the topology with its ready messages and consumers (from the broker), the stay-alive schedulers and whether a supervisor holds each, and the count of stored failed tasks. Each part answers within ${PART_TIMEOUT_MS} ms or says it is unavailable (a dependency down). Roles: admin, operator, viewer.`,
    responses: {
      '200': {
        description: 'The status; a part may be {available: false, error}',
        content: {
          'application/json': {
            schema: {
              type: 'object',
              title: 'SystemStatus',
              properties: {
                producer: {
                  type: 'object',
                  anyOf: [{type: 'object'}, UNAVAILABLE],
                },
                queues: {},
                stay_alive: {},
                failed_tasks: {type: 'object'},
              },
            },
          },
        },
      },
    },
  })
  async status(): Promise<Record<string, unknown>> {
    const sql = repositorySql(this.schedulers);
    const queueNames = brokerTopology(retrySettings(this.config)).queues.map(
      q => q.name,
    );
    const [producer, queues, stayAlive, failedTasks] = await Promise.all([
      part(async () => {
        const [state] = (await sql(
          `SELECT last_slot, updated_at FROM producer_state WHERE name = 'ticks'`,
          [],
        )) as Array<{last_slot: Date | null; updated_at: Date}>;
        const instances = (await sql(
          `SELECT container_id, max(executed_at) AS last_claim_at
             FROM scheduler_execution
            WHERE executed_at > now() - interval '5 minutes' AND trigger = 'schedule'
            GROUP BY container_id ORDER BY container_id`,
          [],
        )) as Array<{container_id: string; last_claim_at: Date}>;
        return {
          last_tick_at: state?.updated_at ?? null,
          last_evaluated_slot: state?.last_slot ?? null,
          instances,
        };
      }),
      part(() => this.broker.queueStats(queueNames)),
      part(async () => {
        const workers = (await sql(
          `SELECT s.id, s.description, s.worker_id,
                  EXISTS (SELECT 1 FROM pg_locks l
                           WHERE l.locktype = 'advisory' AND l.classid = $1::oid
                             AND l.objid = s.id AND l.objsubid = 2 AND l.granted) AS supervised
             FROM scheduler s WHERE s.stay_alive AND s.status ORDER BY s.id`,
          [STAY_ALIVE_LOCK_SPACE],
        )) as Array<{supervised: boolean}>;
        return {
          schedulers: workers.length,
          supervised: workers.filter(w => w.supervised).length,
          workers,
        };
      }),
      part(async () => {
        const [row] = (await sql(
          `SELECT count(*)::int AS stored FROM failed_task`,
          [],
        )) as Array<{stored: number}>;
        return {stored: row.stored};
      }),
    ]);
    return {producer, queues, stay_alive: stayAlive, failed_tasks: failedTasks};
  }
}
