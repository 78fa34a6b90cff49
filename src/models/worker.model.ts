import {Entity, model, property} from '@loopback/repository';
import {MAX_TASK_TIMEOUT_MS} from '../queue/consumer-timeout';
import {idColumn, integerColumn, textColumn, timestampColumn} from './columns';

/** A program the consumer may start: a file inside WORKERS_DIR. */
@model({
  name: 'Worker',
  settings: {strict: true, postgresql: {schema: 'public', table: 'worker'}},
})
export class Worker extends Entity {
  @property(idColumn())
  id?: number;

  @property(
    textColumn('name', {
      required: true,
      jsonSchema: {minLength: 1, maxLength: 200},
    }),
  )
  name: string;

  @property(
    textColumn('command', {
      required: true,
      description:
        'Executable file name inside WORKERS_DIR: letters, digits, ".", "_", "-" only',
      jsonSchema: {pattern: '^[A-Za-z0-9._-]+$', maxLength: 255},
    }),
  )
  command: string;

  @property(textColumn('description', {jsonSchema: {maxLength: 2000}}))
  description?: string | null;

  @property(
    integerColumn('timeout_ms', {
      description:
        "Run time limit in ms; default CRON_TASK_TIMEOUT_MS. At most 28 minutes, below RabbitMQ's 30-minute consumer timeout",
      jsonSchema: {minimum: 1, maximum: MAX_TASK_TIMEOUT_MS},
    }),
  )
  timeout_ms?: number | null;

  @property(timestampColumn('created_at'))
  created_at?: Date | string;

  @property(timestampColumn('updated_at'))
  updated_at?: Date | string;

  constructor(data?: Partial<Worker>) {
    super(data);
  }
}
