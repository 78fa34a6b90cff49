import {ReportInputError} from './report';

function invalid(key: string, message: string): ReportInputError {
  return new ReportInputError(`report_params.${key} ${message}`, [
    {path: `/report_params/${key}`, code: 'type', message},
  ]);
}

/** Unknown params are refused rather than ignored: a typo must not widen a report. */
export function refuseUnknownParams(
  params: Record<string, unknown>,
  known: readonly string[],
): void {
  const unknown = Object.keys(params).filter(key => !known.includes(key));
  if (unknown.length > 0) {
    throw new ReportInputError(
      `Unknown report_params ${unknown.map(k => `"${k}"`).join(', ')}; allowed: ${known.join(', ') || 'none'}`,
      unknown.map(key => ({
        path: `/report_params/${key}`,
        code: 'additionalProperties',
        message: `unknown field "${key}"`,
      })),
    );
  }
}

export function optionalEnumList<T extends string>(
  params: Record<string, unknown>,
  key: string,
  allowed: readonly T[],
): T[] | undefined {
  const value = params[key];
  if (value === undefined || value === null) return undefined;
  if (
    !Array.isArray(value) ||
    value.length === 0 ||
    !value.every(item => allowed.includes(item as T))
  ) {
    throw invalid(
      key,
      `must be a non-empty array of ${allowed.map(a => `"${a}"`).join(', ')}`,
    );
  }
  return [...new Set(value as T[])];
}

export function optionalPositiveInteger(
  params: Record<string, unknown>,
  key: string,
): number | undefined {
  const value = params[key];
  if (value === undefined || value === null) return undefined;
  if (
    !Number.isInteger(value) ||
    (value as number) < 1 ||
    (value as number) > 2147483647
  ) {
    throw invalid(key, 'must be a positive integer');
  }
  return value as number;
}

export function optionalBoolean(
  params: Record<string, unknown>,
  key: string,
  fallback: boolean,
): boolean {
  const value = params[key];
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'boolean') throw invalid(key, 'must be a boolean');
  return value;
}

export function optionalString(
  params: Record<string, unknown>,
  key: string,
  maxLength: number,
): string | undefined {
  const value = params[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || value.length > maxLength) {
    throw invalid(key, `must be a string of at most ${maxLength} characters`);
  }
  return value;
}
