import {authenticate} from '@loopback/authentication';
import {BEARER_STRATEGIES} from '../auth/bearer-strategies';
import {authorize} from '@loopback/authorization';
import {inject} from '@loopback/core';
import {get, oas} from '@loopback/rest';
import {EVERYONE} from '../auth/roles';
import type {EntityRepository} from '../crud/repositories';
import {repositorySql} from '../database/repository-sql';
import {Scheduler} from '../models';

export interface RunsInHour {
  hour: string;
  succeeded: number;
  failed: number;
  other: number;
}

const COUNT = {type: 'integer', minimum: 0};

/**
 * GET /system/runs-per-hour: the last 24 hours of runs by outcome, counted in
 * the database (one grouped query on the executed_at index), so a chart does
 * not page through every run.
 */
@oas.tags('System')
@authenticate(...BEARER_STRATEGIES)
@authorize({allowedRoles: EVERYONE})
export class SystemRunsController {
  constructor(
    @inject('repositories.SchedulerRepository')
    private readonly schedulers: EntityRepository<Scheduler>,
  ) {}

  @get('/system/runs-per-hour', {
    summary: 'Runs per hour over the last 24 hours',
    description:
      'Runs claimed in each of the last 24 UTC hours (the current one last, oldest first), by outcome: succeeded, failed, and other (claimed, published, running, retrying, skipped). Hours without runs count zero. Roles: admin, operator, viewer.',
    responses: {
      '200': {
        description: '24 hourly buckets',
        content: {
          'application/json': {
            schema: {
              type: 'object',
              title: 'RunsPerHour',
              required: ['hours'],
              properties: {
                hours: {
                  type: 'array',
                  minItems: 24,
                  maxItems: 24,
                  items: {
                    type: 'object',
                    title: 'RunsInHour',
                    required: ['hour', 'succeeded', 'failed', 'other'],
                    properties: {
                      hour: {type: 'string', format: 'date-time'},
                      succeeded: COUNT,
                      failed: COUNT,
                      other: COUNT,
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
  async runsPerHour(): Promise<{hours: RunsInHour[]}> {
    const rows = (await repositorySql(this.schedulers)(
      `WITH hours AS (
         SELECT generate_series(
                  date_trunc('hour', now() AT TIME ZONE 'UTC') - interval '23 hours',
                  date_trunc('hour', now() AT TIME ZONE 'UTC'),
                  interval '1 hour') AT TIME ZONE 'UTC' AS hour)
       SELECT h.hour,
              count(e.id) FILTER (WHERE e.status = 'succeeded')::int AS succeeded,
              count(e.id) FILTER (WHERE e.status = 'failed')::int AS failed,
              count(e.id) FILTER (WHERE e.status NOT IN ('succeeded', 'failed'))::int AS other
         FROM hours h
         LEFT JOIN scheduler_execution e
           ON e.executed_at >= h.hour AND e.executed_at < h.hour + interval '1 hour'
        GROUP BY h.hour ORDER BY h.hour`,
      [],
    )) as Array<{hour: Date; succeeded: number; failed: number; other: number}>;
    return {
      hours: rows.map(row => ({
        hour: new Date(row.hour).toISOString(),
        succeeded: row.succeeded,
        failed: row.failed,
        other: row.other,
      })),
    };
  }
}
