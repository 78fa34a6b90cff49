import {request} from 'node:http';
import {AppConfig, loadConfig} from './config';

const TIMEOUT_MS = 5000;

/**
 * The URL the container healthcheck asks: HEALTH_PORT when it is set (every
 * mode serves it then, so the probe needs no APP_MODE), else the API's PORT.
 * The service may listen on 0.0.0.0; the probe asks the loopback address.
 */
export function readinessUrl(config: AppConfig): string {
  const port = config.healthPort ?? config.port;
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
