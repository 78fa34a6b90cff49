import type {BodyExtra} from '../crud/crud-resource';
import {HEADER_MAP_SCHEMA} from '../models/http-target.model';

/** `secret_headers` in request bodies: write-only, so not a visible property. */
export const HTTP_TARGET_SECRET_FIELD: Record<string, BodyExtra> = {
  secret_headers: {
    schema: {
      ...HEADER_MAP_SCHEMA,
      description:
        'Write-only headers (credentials such as Authorization), name to value: stored, sent, never returned or logged',
    },
  },
};
