import type {AnyObject} from '@loopback/repository';
import type {CrudHooks} from '../crud/crud-resource';
import type {HttpTarget} from '../models';
import {
  httpTargetRuleErrors,
  splitCredentialHeaders,
} from '../validation/http-target-rules';
import {validationError} from '../validation/validation-error';
import {refuseWhileScheduled} from './in-use.hooks';

/**
 * The stored form of a create body or patch: credential headers moved to
 * the write-only map, the list of write-only names kept in step, and the
 * rules checked on what the record would become.
 */
export function httpTargetChange(
  body: AnyObject,
  current?: HttpTarget,
): AnyObject {
  const split = splitCredentialHeaders(
    body.headers,
    body.secret_headers ??
      // A patch that moves a credential keeps the other write-only headers.
      (body.headers !== undefined ? current?.secret_headers : undefined),
    body.secret_headers === undefined,
  );
  const change: AnyObject = {...body};
  if (split.headers !== undefined) change.headers = split.headers;
  if (split.secret_headers !== undefined) {
    change.secret_headers = split.secret_headers;
    change.secret_header_names = Object.keys(split.secret_headers).sort();
  }
  const errors = httpTargetRuleErrors({
    url: change.url ?? current?.url,
    headers: change.headers ?? current?.headers,
    secret_headers: change.secret_headers ?? current?.secret_headers,
    success_status: change.success_status ?? current?.success_status,
  });
  if (errors.length > 0) throw validationError(errors);
  return change;
}

export const httpTargetHooks: CrudHooks<HttpTarget> = {
  async beforeUpdate(patch, current) {
    return httpTargetChange(patch, current);
  },
  beforeDelete: refuseWhileScheduled('http_target_id'),
};
