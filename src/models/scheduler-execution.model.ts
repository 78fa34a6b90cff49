import {belongsTo, Entity, model, property} from '@loopback/repository';
import {Scheduler} from './scheduler.model';

/** One claimed run of a scheduler: the ledger row that makes a run unique. */
@model({
  name: 'SchedulerExecution',
  settings: {
    strict: true,
    postgresql: {schema: 'public', table: 'scheduler_execution'},
  },
})
export class SchedulerExecution extends Entity {
  @property({
    type: 'number',
    id: true,
    generated: true,
    jsonSchema: {type: 'integer'},
    postgresql: {columnName: 'id', dataType: 'bigint'},
  })
  id?: number;

  @belongsTo(
    () => Scheduler,
    {name: 'scheduler'},
    {
      type: 'number',
      required: true,
      jsonSchema: {type: 'integer'},
      postgresql: {columnName: 'scheduler_id', dataType: 'integer'},
    },
  )
  scheduler_id: number;

  @property({
    type: 'string',
    required: true,
    description: 'Deduplication key: cron-<year>-<month>-<day>-<hour>-<minute>',
    postgresql: {columnName: 'execution_key', dataType: 'text'},
  })
  execution_key: string;

  @property({
    type: 'date',
    description: 'When the run was claimed',
    postgresql: {
      columnName: 'executed_at',
      dataType: 'timestamp with time zone',
    },
  })
  executed_at?: Date | string;

  @property({
    type: 'string',
    required: true,
    description: 'Producer instance that claimed it (host name plus pid)',
    postgresql: {columnName: 'container_id', dataType: 'text'},
  })
  container_id: string;

  constructor(data?: Partial<SchedulerExecution>) {
    super(data);
  }
}

export interface SchedulerExecutionRelations {
  scheduler?: Scheduler;
}

export type SchedulerExecutionWithRelations = SchedulerExecution &
  SchedulerExecutionRelations;
