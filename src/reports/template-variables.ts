import {wallTimeAt} from '../scheduling/wall-clock';

export interface TemplateContext {
  now: Date;
  /** CRON_TZ: the calendar `today` and `yesterday` are read in. */
  timeZone: string;
  /** The caller of POST /reports/generate, or the scheduler's owner. */
  userId?: number | null;
}

const pad = (n: number) => String(n).padStart(2, '0');

function isoDate(year: number, month: number, day: number): string {
  // Date.UTC normalises day 0 to the last day of the previous month (and year).
  const date = new Date(Date.UTC(year, month - 1, day));
  return `${date.getUTCFullYear()}-${pad(date.getUTCMonth() + 1)}-${pad(date.getUTCDate())}`;
}

/** The values of the known variables; `{{date}}` is the run's calendar date, like `{{today}}`. */
export function templateValues(
  context: TemplateContext,
): Record<string, string> {
  const wall = wallTimeAt(context.now, context.timeZone);
  const today = isoDate(wall.year, wall.month, wall.day);
  const values: Record<string, string> = {
    date: today,
    today,
    yesterday: isoDate(wall.year, wall.month, wall.day - 1),
  };
  if (context.userId !== undefined && context.userId !== null) {
    values.user_id = String(context.userId);
  }
  return values;
}

const VARIABLE = /\{\{\s*([A-Za-z_]+)\s*\}\}/g;

/** Replaces known `{{variable}}`s; unknown ones stay exactly as written. */
export function resolveTemplate(
  text: string,
  context: TemplateContext,
): string {
  const values = templateValues(context);
  return text.replace(VARIABLE, (token, name: string) =>
    Object.prototype.hasOwnProperty.call(values, name) ? values[name] : token,
  );
}

/** Resolves variables in every string of a JSON value (report_params). */
export function resolveTemplatesDeep(
  value: unknown,
  context: TemplateContext,
): unknown {
  if (typeof value === 'string') return resolveTemplate(value, context);
  if (Array.isArray(value)) {
    return value.map(item => resolveTemplatesDeep(item, context));
  }
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [
        key,
        resolveTemplatesDeep(item, context),
      ]),
    );
  }
  return value;
}
