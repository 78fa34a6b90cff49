import {ReportInputError} from './report';

export const OUTPUT_FORMATS = ['PDF', 'Excel', 'CSV'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];
export const OUTPUT_TYPES = ['Direct', 'Attachment'] as const;
export type OutputType = (typeof OUTPUT_TYPES)[number];

/** `options_interface` after the boundary check, defaults filled in. */
export interface ReportOptions {
  delivery: {
    email: boolean;
    web_notification: boolean;
    instant: boolean;
    deliver_to: {user_id: number[]; group_id: number[]};
  };
  output: {type: OutputType; format: OutputFormat; filename?: string};
}

const MAX_RECIPIENT_IDS = 1000;

function fail(path: string, message: string): never {
  throw new ReportInputError(
    `options_interface${path.replace(/\//g, '.')} ${message}`,
    [{path: `/options_interface${path}`, code: 'type', message}],
  );
}

function objectAt(value: unknown, path: string): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) {
    fail(path, 'must be an object');
  }
  return value as Record<string, unknown>;
}

function booleanAt(value: unknown, path: string): boolean {
  if (value === undefined || value === null) return false;
  if (typeof value !== 'boolean') fail(path, 'must be a boolean');
  return value;
}

function idsAt(value: unknown, path: string): number[] {
  if (value === undefined || value === null) return [];
  if (
    !Array.isArray(value) ||
    value.length > MAX_RECIPIENT_IDS ||
    !value.every(id => Number.isInteger(id) && id > 0 && id <= 2147483647)
  ) {
    fail(
      path,
      `must be an array of at most ${MAX_RECIPIENT_IDS} positive integers`,
    );
  }
  return [...new Set(value as number[])];
}

function oneOf<T extends string>(
  value: unknown,
  allowed: readonly T[],
  fallback: T,
  path: string,
): T {
  if (value === undefined || value === null) return fallback;
  if (!allowed.includes(value as T)) {
    fail(
      path,
      `must be one of ${allowed.join(', ')} (got ${JSON.stringify(value)})`,
    );
  }
  return value as T;
}

/**
 * Checks `options_interface` (the spec's shape). Defaults: no delivery
 * channel, not instant, output Attachment as CSV, file name from the report.
 */
export function parseReportOptions(raw: unknown): ReportOptions {
  const options = objectAt(raw, '');
  const delivery = objectAt(options.delivery, '/delivery');
  const deliverTo = objectAt(delivery.deliver_to, '/delivery/deliver_to');
  const output = objectAt(options.output, '/output');
  const file = objectAt(output.file, '/output/file');
  const filename = file.filename;
  if (
    filename !== undefined &&
    filename !== null &&
    (typeof filename !== 'string' || filename.length > 500)
  ) {
    fail('/output/file/filename', 'must be a string of at most 500 characters');
  }
  return {
    delivery: {
      email: booleanAt(delivery.email, '/delivery/email'),
      web_notification: booleanAt(
        delivery.web_notification,
        '/delivery/web_notification',
      ),
      instant: booleanAt(delivery.instant, '/delivery/instant'),
      deliver_to: {
        user_id: idsAt(deliverTo.user_id, '/delivery/deliver_to/user_id'),
        group_id: idsAt(deliverTo.group_id, '/delivery/deliver_to/group_id'),
      },
    },
    output: {
      type: oneOf(file.type, OUTPUT_TYPES, 'Attachment', '/output/file/type'),
      format: oneOf(file.format, OUTPUT_FORMATS, 'CSV', '/output/file/format'),
      filename: (filename as string | null) ?? undefined,
    },
  };
}
