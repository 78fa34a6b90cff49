import {Entity, model, property} from '@loopback/repository';

const INT32_MAX = 2147483647;

/** An optional reference to another record: a positive 32-bit integer or null. */
function reference(column: string) {
  return {
    type: 'number',
    jsonSchema: {
      type: 'integer',
      minimum: 1,
      maximum: INT32_MAX,
      nullable: true,
    },
    postgresql: {columnName: column, dataType: 'integer', nullable: 'YES'},
  } as const;
}

@model({
  name: 'Scheduler',
  settings: {
    strict: true,
    postgresql: {schema: 'public', table: 'scheduler'},
  },
})
export class Scheduler extends Entity {
  @property({
    type: 'number',
    id: true,
    generated: true,
    jsonSchema: {type: 'integer'},
    postgresql: {columnName: 'id', dataType: 'integer'},
  })
  id?: number;

  @property({
    type: 'string',
    required: true,
    jsonSchema: {minLength: 1, maxLength: 1000},
    postgresql: {columnName: 'description', dataType: 'text'},
  })
  description: string;

  @property({
    type: 'string',
    description:
      'Five-field cron expression (recurring schedulers), e.g. 0 6 * * 1-5',
    jsonSchema: {maxLength: 200, nullable: true},
    postgresql: {columnName: 'schedule', dataType: 'text', nullable: 'YES'},
  })
  schedule?: string | null;

  @property({
    type: 'date',
    description:
      'One-time execution moment, ISO 8601 with a zone offset (one-time schedulers)',
    jsonSchema: {nullable: true},
    postgresql: {
      columnName: 'date_time',
      dataType: 'timestamp with time zone',
      nullable: 'YES',
    },
  })
  date_time?: Date | string | null;

  @property({
    type: 'object',
    description: 'Task-specific parameters',
    jsonSchema: {type: 'object'},
    postgresql: {columnName: 'params', dataType: 'jsonb'},
  })
  params?: Record<string, unknown>;

  @property({
    type: 'boolean',
    description: 'true = active, false = inactive',
    postgresql: {columnName: 'status', dataType: 'boolean'},
  })
  status?: boolean;

  @property({
    type: 'boolean',
    description: 'Long-running worker, run by the stay-alive supervisor',
    postgresql: {columnName: 'stay_alive', dataType: 'boolean'},
  })
  stay_alive?: boolean;

  @property(reference('report_id'))
  report_id?: number | null;

  @property(reference('worker_id'))
  worker_id?: number | null;

  @property(reference('reminder_id'))
  reminder_id?: number | null;

  @property({
    ...reference('user_id'),
    description: 'User who created the scheduler',
  })
  user_id?: number | null;

  @property(reference('group_id'))
  group_id?: number | null;

  @property(reference('language_id'))
  language_id?: number | null;

  @property({
    type: 'date',
    postgresql: {
      columnName: 'created_at',
      dataType: 'timestamp with time zone',
    },
  })
  created_at?: Date | string;

  @property({
    type: 'date',
    postgresql: {
      columnName: 'updated_at',
      dataType: 'timestamp with time zone',
    },
  })
  updated_at?: Date | string;

  constructor(data?: Partial<Scheduler>) {
    super(data);
  }
}

export interface SchedulerRelations {}

export type SchedulerWithRelations = Scheduler & SchedulerRelations;
