import type {ErrorDetail} from '../middleware/error-mapping';
import {successStatusProblems} from '../outbound/success-status';
import {HEADER_NAME_PATTERN} from '../models/http-target.model';
import {fieldError} from './validation-error';

const HEADER_NAME = new RegExp(HEADER_NAME_PATTERN);

/** Headers whose values are credentials: always stored write-only. */
export const CREDENTIAL_HEADERS: ReadonlySet<string> = new Set([
  'authorization',
  'proxy-authorization',
  'cookie',
]);

/** Headers the service sets itself (framing, signing): a target may not. */
const RESERVED_HEADERS: ReadonlySet<string> = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
]);

export interface HttpTargetShape {
  url?: string;
  headers?: Record<string, string>;
  secret_headers?: Record<string, string>;
  success_status?: string;
}

export function urlProblems(url: string | undefined): ErrorDetail[] {
  if (url === undefined) return [];
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return [fieldError('url', 'url', 'url is not a valid URL')];
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    return [fieldError('url', 'scheme', 'url must be an http or https URL')];
  }
  if (parsed.username || parsed.password) {
    return [
      fieldError(
        'url',
        'credentials',
        'url must not carry user:password; put credentials in secret_headers (Authorization)',
      ),
    ];
  }
  return [];
}

function headerProblems(record: HttpTargetShape): ErrorDetail[] {
  const errors: ErrorDetail[] = [];
  const seen = new Set<string>();
  for (const field of ['headers', 'secret_headers'] as const) {
    for (const name of Object.keys(record[field] ?? {})) {
      const lower = name.toLowerCase();
      if (!HEADER_NAME.test(name)) {
        errors.push(
          fieldError(
            field,
            'headerName',
            `${JSON.stringify(name.slice(0, 100))} is not a valid header name`,
          ),
        );
      } else if (RESERVED_HEADERS.has(lower)) {
        errors.push(
          fieldError(
            field,
            'reservedHeader',
            `${name} is set by the service and cannot be configured`,
          ),
        );
      } else if (seen.has(lower)) {
        errors.push(
          fieldError(field, 'duplicateHeader', `${name} is given twice`),
        );
      }
      seen.add(lower);
    }
  }
  return errors;
}

/**
 * The cross-field rules of an HTTP target, judged on what the record would
 * become. JSON schema already checked each field's own shape.
 */
export function httpTargetRuleErrors(record: HttpTargetShape): ErrorDetail[] {
  return [
    ...urlProblems(record.url),
    ...headerProblems(record),
    ...(record.success_status === undefined
      ? []
      : successStatusProblems(record.success_status).map(message =>
          fieldError('success_status', 'successStatus', message),
        )),
  ];
}

/**
 * Moves credential headers given among the plain ones to the write-only
 * ones, so they are never shown again.
 */
export function splitCredentialHeaders(
  headers: Record<string, string> | undefined,
  secretHeaders: Record<string, string> | undefined,
  /**
   * `secretHeaders` are the stored ones, not the request's: a credential
   * sent in `headers` replaces the stored one of that name in any case
   * (`authorization` for `Authorization` was a 422 "given twice").
   */
  stored = false,
): {headers?: Record<string, string>; secret_headers?: Record<string, string>} {
  if (headers === undefined) return {secret_headers: secretHeaders};
  const plain: Record<string, string> = {};
  const moved: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (CREDENTIAL_HEADERS.has(name.toLowerCase())) moved[name] = value;
    else plain[name] = value;
  }
  if (Object.keys(moved).length === 0 && secretHeaders === undefined) {
    return {headers: plain};
  }
  const replaced = new Set(Object.keys(moved).map(name => name.toLowerCase()));
  const kept = stored
    ? Object.fromEntries(
        Object.entries(secretHeaders ?? {}).filter(
          ([name]) => !replaced.has(name.toLowerCase()),
        ),
      )
    : secretHeaders;
  return {headers: plain, secret_headers: {...kept, ...moved}};
}
