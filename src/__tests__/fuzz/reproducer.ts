import type {FuzzRequest} from './request-arbitrary';
import type {Answer} from './response-checks';

const SHOWN = 1500;

/** Long values shown by their start and length, never dumped whole. */
function shorten(text: string): string {
  return text.length <= SHOWN
    ? text
    : `${text.slice(0, SHOWN)}… (${text.length} characters in all)`;
}

export interface Failure {
  index: number;
  request: FuzzRequest;
  answer?: Answer;
  problems: string[];
}

/** Everything needed to send the failing request again, by hand or by seed. */
export function describeFailure(
  failure: Failure,
  url: string,
  replay: string,
): string {
  const {request, answer} = failure;
  const lines = [
    `  problems: ${failure.problems.join('; ')}`,
    `  request #${failure.index}: ${request.method} ${shorten(url)}`,
    `  operation: ${request.operation}`,
    `  authorization: ${request.auth}`,
  ];
  if (request.body) {
    lines.push(
      `  content-type: ${request.body.contentType || '(none)'}`,
      `  body (${request.body.kind}): ${shorten(request.body.text)}`,
    );
  }
  if (answer) {
    lines.push(
      `  answer: ${answer.status} in ${Math.round(answer.ms)} ms, ${answer.contentType}: ${shorten(answer.text)}`,
    );
  }
  lines.push(`  replay: ${replay}`);
  return lines.join('\n');
}
