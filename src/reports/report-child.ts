import type {ReportRequest} from './report';
import {REPORT_REGISTRY} from './registry';

/**
 * Entry point of the report child process. Protocol: the parent sends one
 * `{type: 'run', request}` message; the child answers `{type: 'completed',
 * summary}` and exits 0, or `{type: 'failed', error: {name, message, stack}}`
 * and exits 1.
 */
type ParentMessage = {type: 'run'; request: ReportRequest};

function send(message: object): Promise<void> {
  return new Promise(resolve => process.send!(message, () => resolve()));
}

process.once('message', (message: ParentMessage) => {
  const run = async () => {
    const ReportClass = REPORT_REGISTRY[message.request.controller];
    if (!ReportClass) {
      throw new Error(`unknown report "${message.request.controller}"`);
    }
    return new ReportClass().run(message.request);
  };
  run().then(
    async result => {
      await send({type: 'completed', summary: result.summary});
      process.exit(0);
    },
    async (error: Error) => {
      await send({
        type: 'failed',
        error: {name: error.name, message: error.message, stack: error.stack},
      });
      process.exit(1);
    },
  );
});
