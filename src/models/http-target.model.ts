import {Entity, model, property} from '@loopback/repository';
import {
  DEFAULT_SUCCESS_STATUS,
  SUCCESS_STATUS_PATTERN,
} from '../outbound/success-status';
import {
  idColumn,
  integerColumn,
  jsonObjectColumn,
  textColumn,
  timestampColumn,
} from './columns';

/** Longest run time of one call: an HTTP task holds a consumer slot meanwhile. */
export const MAX_HTTP_TIMEOUT_MS = 10 * 60 * 1000;
export const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/** A header name as RFC 9110 allows it (a token). */
export const HEADER_NAME_PATTERN = "^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$";
/** Header values: visible ASCII and spaces, no line breaks. */
const HEADER_VALUE_SCHEMA = {
  type: 'string' as const,
  maxLength: 4096,
  pattern: '^[\\x20-\\x7E\\t]*$',
};

/** Header names are checked by the HTTP target rules (OpenAPI 3.0 has no propertyNames). */
export const HEADER_MAP_SCHEMA = {
  type: 'object' as const,
  maxProperties: 50,
  additionalProperties: HEADER_VALUE_SCHEMA,
};

/** A URL the consumer calls when a scheduler that names it is due. */
@model({
  name: 'HttpTarget',
  settings: {
    strict: true,
    postgresql: {schema: 'public', table: 'http_target'},
    // Write-only: never in responses, audit events or logs.
    hiddenProperties: [
      'secret_headers',
      'signing_secret',
      'previous_signing_secret',
    ],
  },
})
export class HttpTarget extends Entity {
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
    textColumn('url', {
      required: true,
      description:
        'http or https URL, without user:password (put credentials in secret_headers). Every address it resolves to must pass the SSRF guard',
      jsonSchema: {
        format: 'uri',
        pattern: '^[Hh][Tt][Tt][Pp][Ss]?://',
        maxLength: 2048,
      },
    }),
  )
  url: string;

  @property(
    textColumn('method', {
      description: 'HTTP method; POST unless given',
      jsonSchema: {enum: [...HTTP_METHODS], nullable: false},
    }),
  )
  method?: string;

  @property(
    jsonObjectColumn('headers', {
      description:
        'Request headers, name to value, shown in responses. Authorization, Proxy-Authorization and Cookie given here are moved to secret_headers',
      jsonSchema: HEADER_MAP_SCHEMA,
    }),
  )
  headers?: Record<string, string>;

  @property(
    jsonObjectColumn('secret_headers', {
      description: 'Write-only headers (credentials): never returned or logged',
    }),
  )
  secret_headers?: Record<string, string>;

  @property({
    type: 'object',
    description:
      'Names of the write-only headers that are set (their values are never shown)',
    jsonSchema: {type: 'array', items: {type: 'string'}},
    postgresql: {columnName: 'secret_header_names', dataType: 'jsonb'},
  })
  secret_header_names?: string[];

  @property(
    textColumn('body', {
      description:
        'Request body; {{date}}, {{today}}, {{yesterday}} and {{user_id}} (the scheduler owner) are replaced at each run, as in reports',
      jsonSchema: {maxLength: 65536},
    }),
  )
  body?: string | null;

  @property(
    integerColumn('timeout_ms', {
      description: `Time limit of the whole exchange in ms; 30000 unless given, at most ${MAX_HTTP_TIMEOUT_MS}`,
      jsonSchema: {minimum: 100, maximum: MAX_HTTP_TIMEOUT_MS, nullable: false},
    }),
  )
  timeout_ms?: number;

  @property(
    textColumn('success_status', {
      description: `Status codes that count as success: codes and ranges, comma-separated; ${DEFAULT_SUCCESS_STATUS} unless given. A 3xx is always a failure (redirects are not followed)`,
      jsonSchema: {
        pattern: SUCCESS_STATUS_PATTERN,
        maxLength: 200,
        nullable: false,
      },
    }),
  )
  success_status?: string;

  @property(textColumn('signing_secret'))
  signing_secret?: string;

  @property(textColumn('previous_signing_secret'))
  previous_signing_secret?: string | null;

  @property(
    timestampColumn('previous_secret_expires_at', {
      description:
        'Until then the previous signing secret signs as well (after a rotation)',
      jsonSchema: {nullable: true},
    }),
  )
  previous_secret_expires_at?: Date | string | null;

  @property(
    timestampColumn('secret_rotated_at', {jsonSchema: {nullable: true}}),
  )
  secret_rotated_at?: Date | string | null;

  @property(timestampColumn('created_at'))
  created_at?: Date | string;

  @property(timestampColumn('updated_at'))
  updated_at?: Date | string;

  constructor(data?: Partial<HttpTarget>) {
    super(data);
  }
}
