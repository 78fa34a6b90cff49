/**
 * The cron dialect people type, checked exactly: the spec's five numeric
 * fields, plus what Vixie cron accepts on top (month and weekday names in any
 * case, also in ranges, steps and lists; 7 as Sunday; the @ macros). Quartz
 * and seconds syntax is refused with a message that says what is supported:
 * cron-parser alone would accept it and fire at times the user did not mean.
 * Pure: no I/O, no clock.
 */
export interface CronFieldSpec {
  name: string;
  min: number;
  max: number;
  /** Names standing for values, index + `nameBase` (JAN = 1, SUN = 0). */
  names?: readonly string[];
  nameBase?: number;
}

const MONTH_NAMES = [
  'JAN',
  'FEB',
  'MAR',
  'APR',
  'MAY',
  'JUN',
  'JUL',
  'AUG',
  'SEP',
  'OCT',
  'NOV',
  'DEC',
] as const;
const DAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'] as const;

export const CRON_FIELDS: readonly CronFieldSpec[] = [
  {name: 'minute', min: 0, max: 59},
  {name: 'hour', min: 0, max: 23},
  {name: 'day-of-month', min: 1, max: 31},
  {name: 'month', min: 1, max: 12, names: MONTH_NAMES, nameBase: 1},
  // 7 is Sunday as well as 0, as in Vixie cron.
  {name: 'day-of-week', min: 0, max: 7, names: DAY_NAMES, nameBase: 0},
];

/** Vixie cron's macros, each the five fields it stands for. */
export const CRON_MACROS: Readonly<Record<string, string>> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

export const SUPPORTED_CRON_SYNTAX =
  'supported: five fields (minute hour day-of-month month day-of-week) made of *, N, A-B, */N, A-B/N and lists, ' +
  'month names JAN-DEC, weekday names SUN-SAT (7 is Sunday too), ' +
  `and the macros ${Object.keys(CRON_MACROS).join(', ')}`;

const VALUE = '(\\d+|[A-Za-z]+)';
const ITEM = new RegExp(`^(\\*|${VALUE}|${VALUE}-${VALUE})(?:/(\\d+))?$`);
/** Quartz and other dialects' extensions: L, W, LW, nL, nW, n#m, ?. */
const FOREIGN = /[?#]|(^|[\s,/-])(L|LW|\d+[LW]|L-\d+)(?=$|[\s,/-])/i;

type Parsed = {value: number} | {problem: string};

function parseValue(field: CronFieldSpec, text: string): Parsed {
  if (/^\d+$/.test(text)) {
    const value = Number(text);
    if (value < field.min || value > field.max) {
      return {
        problem: `${field.name} value ${text} is out of range ${field.min}-${field.max}`,
      };
    }
    return {value};
  }
  const index = field.names?.indexOf(text.toUpperCase()) ?? -1;
  if (index < 0) {
    return {
      problem: field.names
        ? `unknown ${field.name} name "${text}"; use ${field.names[0]}-${field.names[field.names.length - 1]} or numbers`
        : `${field.name} takes numbers only, got "${text}"`,
    };
  }
  return {value: index + (field.nameBase ?? 0)};
}

/** The item with names replaced by numbers, or what is wrong with it. */
function normalizeItem(
  field: CronFieldSpec,
  item: string,
): {text: string} | {problem: string} {
  const match = ITEM.exec(item);
  if (!match) {
    return {
      problem: `${field.name} element "${item}" is not one of *, N, A-B, */N, A-B/N`,
    };
  }
  const [, base, single, from, to, step] = match;
  let text = '*';
  if (single !== undefined) {
    const parsed = parseValue(field, single);
    if ('problem' in parsed) return parsed;
    text = String(parsed.value);
  } else if (from !== undefined) {
    const low = parseValue(field, from);
    if ('problem' in low) return low;
    const high = parseValue(field, to);
    if ('problem' in high) return high;
    if (low.value > high.value) {
      return {problem: `${field.name} range ${base} runs backwards`};
    }
    text = `${low.value}-${high.value}`;
  }
  if (step === undefined) return {text};
  const span = field.max - field.min + 1;
  if (Number(step) < 1 || Number(step) > span) {
    return {
      problem: `${field.name} step ${step} must be between 1 and ${span}`,
    };
  }
  if (single !== undefined) {
    return {
      problem: `${field.name} element "${item}": a step needs * or a range before it`,
    };
  }
  return {text: `${text}/${Number(step)}`};
}

export type NormalizedCron =
  | {
      fields: string[];
      /** Per field: does it begin with `*` (Vixie cron's "unrestricted" day rule)? */
      starred: boolean[];
      problems?: undefined;
    }
  | {fields?: undefined; starred?: undefined; problems: string[]};

/**
 * The five numeric fields `expression` stands for (macros expanded, names
 * replaced by numbers), or every problem with it.
 */
export function normalizeCron(expression: string): NormalizedCron {
  // Only ASCII spaces separate fields: trim() would also take NBSP and tabs.
  const text = expression.replace(/^ +| +$/g, '');
  if (!/^[0-9A-Za-z*,/\-@ ?#]*$/.test(text)) {
    return {
      problems: [
        'a cron expression may contain only digits, letters of month and weekday names, spaces and the characters * , - /',
      ],
    };
  }
  if (text.startsWith('@')) {
    const macro = CRON_MACROS[text.toLowerCase()];
    if (macro) {
      const fields = macro.split(' ');
      return {fields, starred: fields.map(field => field.startsWith('*'))};
    }
    return {
      problems: [
        text.toLowerCase() === '@reboot'
          ? `@reboot is not supported: schedulers run on a clock, not at start-up; ${SUPPORTED_CRON_SYNTAX}`
          : `unknown macro "${text.slice(0, 20)}"; ${SUPPORTED_CRON_SYNTAX}`,
      ],
    };
  }
  if (FOREIGN.test(text)) {
    return {
      problems: [
        `L, W, # and ? (Quartz syntax) are not supported; ${SUPPORTED_CRON_SYNTAX}`,
      ],
    };
  }
  if (text.includes('@')) {
    return {problems: [`a macro stands alone; ${SUPPORTED_CRON_SYNTAX}`]};
  }
  const given = text.split(/ +/).filter(Boolean);
  if (given.length !== CRON_FIELDS.length) {
    const seconds =
      given.length === 6 || given.length === 7
        ? ` (seconds and year fields are not supported; ${SUPPORTED_CRON_SYNTAX})`
        : '';
    return {
      problems: [
        `a cron expression needs exactly five space-separated fields ` +
          `(minute hour day-of-month month day-of-week), got ${given.length}${seconds}`,
      ],
    };
  }
  const problems: string[] = [];
  const fields = given.map((fieldText, index) => {
    const field = CRON_FIELDS[index];
    const items: string[] = [];
    for (const item of fieldText.split(',')) {
      const normalized = normalizeItem(field, item);
      if ('problem' in normalized) problems.push(normalized.problem);
      else items.push(normalized.text);
    }
    return canonicalField(field, items);
  });
  if (problems.length > 0) return {problems};
  return {fields, starred: given.map(field => field.startsWith('*'))};
}

/**
 * A field as cron-parser should see it: `*` (with its step) kept, anything
 * else expanded into its distinct values, with 7 folded into 0 for the day
 * of week. Vixie cron takes `0,7`, `SUN,7` or `1,1`; cron-parser refuses
 * duplicate values, so they are merged here.
 */
function canonicalField(field: CronFieldSpec, items: string[]): string {
  if (items.length === 1 && items[0].startsWith('*')) return items[0];
  const values = new Set<number>();
  for (const item of items) {
    const [base, step] = item.split('/');
    const [from, to] =
      base === '*'
        ? [field.min, field.max]
        : base.includes('-')
          ? base.split('-').map(Number)
          : [Number(base), step === undefined ? Number(base) : field.max];
    for (let value = from; value <= to; value += Number(step ?? 1)) {
      values.add(field.name === 'day-of-week' ? value % 7 : value);
    }
  }
  return [...values].sort((a, b) => a - b).join(',');
}

/** Every problem with `expression`; an empty list means it is valid. */
export function cronSyntaxErrors(expression: string): string[] {
  return normalizeCron(expression).problems ?? [];
}

export function isValidCronExpression(expression: string): boolean {
  return cronSyntaxErrors(expression).length === 0;
}
