import Ajv from 'ajv';
import type {JsonSchema} from './schema-arbitrary';

export const SLOW_MS = 1000;

const isSlowness = (problem: string) => problem.startsWith('took ');

/**
 * The slow limit is there to catch a request the service cannot answer
 * quickly (a pathological pattern, a plan without its index), not a machine
 * busy with something else for a moment: a slow answer that is the only
 * problem is asked again, when asking again changes nothing (a read, or a
 * refused write), and counts only if the second answer is slow too.
 */
export async function confirmSlowness(
  problems: string[],
  request: {method: string},
  answer: Answer,
  resend: () => Promise<Answer>,
): Promise<string[]> {
  const onlySlow = problems.length > 0 && problems.every(isSlowness);
  const harmless = request.method === 'GET' || answer.status >= 400;
  if (!onlySlow || !harmless) return problems;
  const again = await resend();
  return again.ms > SLOW_MS
    ? [...problems, `asked again: took ${Math.round(again.ms)} ms`]
    : [];
}

export interface Answer {
  status: number;
  contentType: string;
  text: string;
  ms: number;
  retryAfter?: string;
  /** The X-Request-Id response header. */
  requestId?: string;
}

const ERROR_FIELDS = new Set([
  'statusCode',
  'name',
  'message',
  'details',
  'request_id',
]);

/**
 * The pass criteria one answer must meet: no 5xx, no request over a second,
 * and every error in the uniform body the OpenAPI document promises
 * (`ErrorResponse`), with nothing else in it (its request_id the response's
 * X-Request-Id): in production no stack either.
 */
export function answerChecker(errorSchema: JsonSchema) {
  // The document's dialect carries `example`, which strict mode refuses.
  const validate = new Ajv({strict: false, allErrors: true}).compile(
    errorSchema,
  );

  function errorBodyProblems(answer: Answer): string[] {
    if (!/^application\/json\b/.test(answer.contentType)) {
      return [`error answered as "${answer.contentType}", not JSON`];
    }
    let body: unknown;
    try {
      body = JSON.parse(answer.text);
    } catch {
      return ['error body is not JSON'];
    }
    if (!validate(body)) {
      return [
        `error body breaks ErrorResponse: ${JSON.stringify(validate.errors)}`,
      ];
    }
    const {error, ...rest} = body as {error: Record<string, unknown>};
    const problems: string[] = [];
    if (Object.keys(rest).length > 0) {
      problems.push(`error body has extra keys ${Object.keys(rest)}`);
    }
    const extra = Object.keys(error).filter(key => !ERROR_FIELDS.has(key));
    if (extra.length > 0) problems.push(`error has extra keys ${extra}`);
    if (error.request_id !== answer.requestId) {
      problems.push(
        `error.request_id ${String(error.request_id)} differs from X-Request-Id ${String(answer.requestId)}`,
      );
    }
    if (error.statusCode !== answer.status) {
      problems.push(
        `error.statusCode ${String(error.statusCode)} differs from status ${answer.status}`,
      );
    }
    return problems;
  }

  return (answer: Answer): string[] => {
    const problems: string[] = [];
    if (answer.status >= 500) problems.push(`server error ${answer.status}`);
    if (answer.status >= 400) problems.push(...errorBodyProblems(answer));
    if (answer.ms > SLOW_MS) {
      problems.push(`took ${Math.round(answer.ms)} ms (limit ${SLOW_MS} ms)`);
    }
    return problems;
  };
}
