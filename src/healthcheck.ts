import {request} from 'node:http';
import {runsRole} from './roles';
import {AppConfig, loadConfig} from './config';

const TIMEOUT_MS = 5000;

/**
 * The URL the container healthcheck asks: the API's own port in the api and
 * all modes, HEALTH_PORT in the others. The API listens on HOST, which may be
 * 0.0.0.0; the probe always asks the loopback address.
 */
export function readinessUrl(config: AppConfig): string {
  const port = runsRole(config.appMode, 'api')
    ? config.port
    : config.healthPort;
  if (port === undefined) {
    throw new Error(
      `HEALTH_PORT is not set: APP_MODE=${config.appMode} has no health endpoint`,
    );
  }
  return `http://127.0.0.1:${port}${config.apiBasePath}/ready`;
}

/** Exit 0 when /ready answers 200 within the timeout, 1 otherwise (Docker HEALTHCHECK). */
function probe(url: string): void {
  const req = request(url, {timeout: TIMEOUT_MS}, response => {
    response.resume();
    process.stdout.write(`${url} answered ${response.statusCode}\n`);
    process.exit(response.statusCode === 200 ? 0 : 1);
  });
  req.on('timeout', () =>
    req.destroy(new Error(`no answer in ${TIMEOUT_MS} ms`)),
  );
  req.on('error', error => {
    process.stdout.write(`${url}: ${error.message}\n`);
    process.exit(1);
  });
  req.end();
}

if (require.main === module) {
  try {
    probe(readinessUrl(loadConfig()));
  } catch (error) {
    process.stdout.write(`${(error as Error).message}\n`);
    process.exit(1);
  }
}
