import {HttpErrorResponse} from '@angular/common/http';

interface ErrorDetail {
  path?: string;
  message?: string;
}

interface ErrorBody {
  error?: {
    message?: string;
    request_id?: string;
    details?: ErrorDetail[];
  };
}

function bodyOf(error: unknown): ErrorBody['error'] | undefined {
  if (!(error instanceof HttpErrorResponse)) return undefined;
  let body = error.error as ErrorBody | string | null;
  // A call that expects no JSON back (a delete) receives its error body as text.
  if (typeof body === 'string') {
    try {
      body = JSON.parse(body) as ErrorBody;
    } catch {
      return undefined;
    }
  }
  return body && typeof body === 'object' ? body.error : undefined;
}

/** The API's own message for an error, with its status and request id. */
export function errorMessage(error: unknown): string {
  if (error instanceof HttpErrorResponse) {
    if (error.status === 0) {
      return 'The API cannot be reached: check your connection and that the service runs.';
    }
    const body = bodyOf(error);
    const message = body?.message ?? error.statusText ?? 'Request failed';
    const id = body?.request_id ? `, request id ${body.request_id}` : '';
    return `${message} (HTTP ${error.status}${id})`;
  }
  return error instanceof Error ? error.message : String(error);
}

/**
 * A 422's `details` by the field they name: `/schedule` → `schedule`,
 * `/params/message` → `params`. What names no field lands under `''`.
 */
export function detailsByField(error: unknown): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const detail of bodyOf(error)?.details ?? []) {
    const field = (detail.path ?? '').split('/')[1] ?? '';
    const text = detail.message ?? 'is invalid';
    fields[field] = fields[field] ? `${fields[field]}; ${text}` : text;
  }
  return fields;
}
