/**
 * The spec's five-field cron syntax, checked exactly: cron-parser alone accepts
 * '' and four-field strings, names, `?`, `L` and second fields, none of which
 * the spec allows. Pure: no I/O, no clock.
 */
export interface CronFieldSpec {
  name: string;
  min: number;
  max: number;
}

export const CRON_FIELDS: readonly CronFieldSpec[] = [
  {name: 'minute', min: 0, max: 59},
  {name: 'hour', min: 0, max: 23},
  {name: 'day-of-month', min: 1, max: 31},
  {name: 'month', min: 1, max: 12},
  {name: 'day-of-week', min: 0, max: 6},
];

const ITEM = /^(\*|\d+|\d+-\d+)(?:\/(\d+))?$/;

function checkValue(field: CronFieldSpec, text: string): string | undefined {
  const value = Number(text);
  if (value < field.min || value > field.max) {
    return `${field.name} value ${text} is out of range ${field.min}-${field.max}`;
  }
  return undefined;
}

function checkItem(field: CronFieldSpec, item: string): string | undefined {
  const match = ITEM.exec(item);
  if (!match) {
    return `${field.name} element "${item}" is not one of *, N, A-B, */N, A-B/N`;
  }
  const [, base, step] = match;
  if (step !== undefined) {
    const span = field.max - field.min + 1;
    if (Number(step) < 1 || Number(step) > span) {
      return `${field.name} step ${step} must be between 1 and ${span}`;
    }
    if (/^\d+$/.test(base)) {
      return `${field.name} element "${item}": a step needs * or a range before it`;
    }
  }
  if (base === '*') return undefined;
  const [from, to] = base.split('-');
  const problem =
    checkValue(field, from) ??
    (to === undefined ? undefined : checkValue(field, to));
  if (problem) return problem;
  if (to !== undefined && Number(from) > Number(to)) {
    return `${field.name} range ${base} runs backwards`;
  }
  return undefined;
}

/** Every problem with `expression`; an empty list means it is valid. */
export function cronSyntaxErrors(expression: string): string[] {
  if (!/^[0-9*,/\- ]*$/.test(expression)) {
    return [
      'a cron expression may contain only digits, spaces and the characters * , - /',
    ];
  }
  const fields = expression.trim().split(/ +/).filter(Boolean);
  if (fields.length !== CRON_FIELDS.length) {
    return [
      `a cron expression needs exactly five space-separated fields ` +
        `(minute hour day-of-month month day-of-week), got ${fields.length}`,
    ];
  }
  const errors: string[] = [];
  fields.forEach((text, index) => {
    const field = CRON_FIELDS[index];
    for (const item of text.split(',')) {
      const problem = checkItem(field, item);
      if (problem) errors.push(problem);
    }
  });
  return errors;
}

export function isValidCronExpression(expression: string): boolean {
  return cronSyntaxErrors(expression).length === 0;
}
