import {Entity, model, property} from '@loopback/repository';
import {idColumn, textColumn, timestampColumn} from './columns';

@model({
  name: 'Language',
  settings: {strict: true, postgresql: {schema: 'public', table: 'language'}},
})
export class Language extends Entity {
  @property(idColumn())
  id?: number;

  @property(
    textColumn('code', {
      required: true,
      description: 'BCP 47 language tag, e.g. en or de-CH',
      jsonSchema: {
        pattern: '^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$',
        maxLength: 35,
      },
    }),
  )
  code: string;

  @property(
    textColumn('name', {
      required: true,
      jsonSchema: {minLength: 1, maxLength: 200},
    }),
  )
  name: string;

  @property(timestampColumn('created_at'))
  created_at?: Date | string;

  @property(timestampColumn('updated_at'))
  updated_at?: Date | string;

  constructor(data?: Partial<Language>) {
    super(data);
  }
}
