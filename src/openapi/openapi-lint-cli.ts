/* eslint-disable no-console */
import {execFile} from 'node:child_process';
import {writeFile} from 'node:fs/promises';
import path from 'node:path';
import {promisify} from 'node:util';
import {PROJECT_ROOT} from '../config';
import {describeApi} from './api-document';

/** A command-line report line (this is a CLI, not the service: no logger). */
const print = (text: unknown) => process.stdout.write(`${String(text)}\n`);

const run = promisify(execFile);
const bin = (name: string) =>
  path.join(PROJECT_ROOT, 'node_modules/.bin', name);
/** Relative to the project root, as `.redocly.lint-ignore.yaml` names it. */
const DOCUMENT = 'dist/openapi.json';

interface RedoclyReport {
  totals: {errors: number; warnings: number; ignored: number};
}

/** Spectral (spectral:oas): any hint or worse fails. */
async function spectral(): Promise<boolean> {
  try {
    const {stdout} = await run(
      bin('spectral'),
      ['lint', '--ruleset', '.spectral.yaml', '--fail-severity=hint', DOCUMENT],
      {cwd: PROJECT_ROOT},
    );
    print(`spectral: ${stdout.trim()}`);
    return true;
  } catch (error) {
    print((error as {stdout?: string}).stdout ?? String(error));
    return false;
  }
}

/** Redocly (recommended): errors fail its exit code, so warnings are counted here. */
async function redocly(): Promise<boolean> {
  const options = {
    cwd: PROJECT_ROOT,
    env: {
      ...process.env,
      REDOCLY_TELEMETRY: 'off',
      REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
    },
    maxBuffer: 16 * 1024 * 1024,
  };
  const args = ['lint', '--config', 'redocly.yaml', DOCUMENT];
  let report: RedoclyReport;
  try {
    const {stdout} = await run(
      bin('redocly'),
      [...args, '--format=json'],
      options,
    );
    report = JSON.parse(stdout) as RedoclyReport;
  } catch (error) {
    const stdout = (error as {stdout?: string}).stdout ?? '';
    try {
      report = JSON.parse(stdout) as RedoclyReport;
    } catch {
      print(stdout || String(error));
      return false;
    }
  }
  const {errors, warnings, ignored} = report.totals;
  print(
    `redocly: ${errors} errors, ${warnings} warnings (${ignored} ignored with a reason)`,
  );
  if (errors + warnings === 0) return true;
  // Show them readably.
  await run(bin('redocly'), [...args, '--format=stylish'], options).then(
    ({stdout}) => print(stdout),
    (error: {stdout?: string}) => print(error.stdout),
  );
  return false;
}

/** `npm run openapi:lint`: the served document through both linters, no problem allowed. */
async function main(): Promise<number> {
  const document = await describeApi();
  await writeFile(
    path.join(PROJECT_ROOT, DOCUMENT),
    JSON.stringify(document, null, 2),
  );
  const results = [await spectral(), await redocly()];
  return results.every(Boolean) ? 0 : 1;
}

main().then(
  code => process.exit(code),
  error => {
    console.error(error);
    process.exit(1);
  },
);
