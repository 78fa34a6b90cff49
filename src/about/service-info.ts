import {readFileSync} from 'node:fs';
import path from 'node:path';

/** How the service names itself: the OpenAPI title and the explorer page's title. */
export const SERVICE_TITLE = 'Task Scheduler API';

/** package.json's license; the OpenAPI linters accept this SPDX expression as a name. */
export const SERVICE_LICENSE = 'UNLICENSED';

/** The guides a reader of the API document is sent to, by repository path. */
export const SERVICE_GUIDES: ReadonlyArray<{path: string; about: string}> = [
  {
    path: 'README.md',
    about: 'what the service is, quick start, first five minutes',
  },
  {
    path: 'docs/api.md',
    about: 'resources, rules, errors, sign-in and roles, filters',
  },
  {
    path: 'docs/scheduling.md',
    about: 'cron dialect, time zones, catch-up, backfill',
  },
  {path: 'docs/tasks.md', about: 'workers, retries, failed tasks and re-drive'},
  {path: 'docs/operations.md', about: 'runbooks'},
];

let version: string | undefined;

/** The version in package.json, read once (whether run from src or dist). */
export function serviceVersion(): string {
  version ??= (
    JSON.parse(
      readFileSync(path.resolve(__dirname, '../../package.json'), 'utf8'),
    ) as {version: string}
  ).version;
  return version;
}
