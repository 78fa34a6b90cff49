import {param} from '@loopback/rest';
import {MAX_REASON_LENGTH} from '../audit/audit-event';

/**
 * The optional `X-Change-Reason` header of an audited write, declared in the
 * OpenAPI document so a generated client (the console's editor) can send it.
 * The audit reads it from the request (crud/audited-write.ts), which also
 * judges its length, so its errors stay the ones documented before.
 */
export const changeReasonHeader = () =>
  param.header.string('X-Change-Reason', {
    required: false,
    description: `Why, for the audit log (at most ${MAX_REASON_LENGTH} characters).`,
  });
