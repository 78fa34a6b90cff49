import {Entity, model, property} from '@loopback/repository';
import {
  idColumn,
  integerColumn,
  jsonObjectColumn,
  referenceColumn,
  textColumn,
  timestampColumn,
} from './columns';

/** A task that exhausted its retries (or could never run), kept for re-drive. */
@model({
  name: 'FailedTask',
  settings: {
    strict: true,
    postgresql: {schema: 'public', table: 'failed_task'},
  },
})
export class FailedTask extends Entity {
  @property(idColumn('bigint'))
  id?: number;

  @property({
    type: 'number',
    jsonSchema: {type: 'integer', nullable: true},
    postgresql: {columnName: 'execution_id', dataType: 'bigint'},
  })
  execution_id?: number | null;

  @property(referenceColumn('scheduler_id'))
  scheduler_id?: number | null;

  @property(textColumn('type', {description: 'report, worker or reminder'}))
  type?: string | null;

  @property(
    referenceColumn('task_id', {description: 'Report, worker or reminder id'}),
  )
  task_id?: number | null;

  @property(
    textColumn('params_scheduler', {description: 'JSON-encoded params'}),
  )
  params_scheduler?: string | null;

  @property(
    jsonObjectColumn('payload', {
      description: 'The failed message as received',
    }),
  )
  payload?: Record<string, unknown>;

  @property(textColumn('failed_reason', {required: true}))
  failed_reason: string;

  @property(
    integerColumn('retry_count', {
      required: true,
      jsonSchema: {nullable: false},
    }),
  )
  retry_count: number;

  @property(timestampColumn('failed_at', {required: true}))
  failed_at: Date | string;

  @property(timestampColumn('created_at'))
  created_at?: Date | string;

  @property(integerColumn('redrive_count', {jsonSchema: {nullable: false}}))
  redrive_count?: number;

  @property(timestampColumn('redriven_at', {jsonSchema: {nullable: true}}))
  redriven_at?: Date | string | null;

  @property(
    referenceColumn('redriven_by', {description: 'User who re-drove it last'}),
  )
  redriven_by?: number | null;

  constructor(data?: Partial<FailedTask>) {
    super(data);
  }
}
