/* eslint-disable no-console */
import {Client} from 'pg';
import {runLoginProfile} from './login-profile';
import {answerChecker} from './response-checks';
import {parseArgs} from 'node:util';
import {TEST_DATABASE_URL} from '../fixtures/test-database';
import {describeOperations} from './api-operations';
import {DataSnapshotter} from './data-snapshot';
import {runFilterSweep} from './filter-sweep-run';
import {createFuzzEnvironment, Fixtures} from './fuzz-environment';
import {runFuzz} from './fuzz-run';
import {FuzzService} from './fuzz-service';
import {describeFailure} from './reproducer';

/**
 * `npm run test:fuzz [-- --full] [--seed N] [--requests N] [--path P] [--sweep-only]`:
 * sweeps every filter the OpenAPI document allows, then sends generated requests to a real service process on a database and vhost
 * of its own and exits non-zero on the first request that breaks a rule.
 */
const PROFILES = {short: 3000, full: 10_000};

function settingsFromArgs() {
  const {values} = parseArgs({
    options: {
      full: {type: 'boolean', default: false},
      seed: {type: 'string'},
      requests: {type: 'string'},
      path: {type: 'string'},
      'sweep-only': {type: 'boolean', default: false},
    },
  });
  const seed = values.seed
    ? Number(values.seed)
    : Math.floor(Math.random() * 2 ** 31);
  const requests = values.requests
    ? Number(values.requests)
    : values.full
      ? PROFILES.full
      : PROFILES.short;
  if (
    !Number.isSafeInteger(seed) ||
    !Number.isSafeInteger(requests) ||
    requests < 1
  ) {
    throw new Error('--seed and --requests take integers (requests ≥ 1)');
  }
  return {
    seed,
    requests,
    path: values.path,
    full: values.full,
    sweepOnly: values['sweep-only'],
  };
}

async function main(): Promise<number> {
  const settings = settingsFromArgs();
  console.log(
    `fuzz: seed ${settings.seed}, ${settings.requests} requests${settings.path ? `, path ${settings.path}` : ''}`,
  );
  const environment = await createFuzzEnvironment();
  const client = new Client({connectionString: TEST_DATABASE_URL});
  let service: FuzzService | undefined;
  let cleaning: Promise<void> | undefined;
  // Once only, whether the run ends or is interrupted: nothing is left behind.
  const cleanUp = () =>
    (cleaning ??= (async () => {
      await service?.stop();
      await client.end().catch(() => undefined);
      await environment.remove();
    })());
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      console.log(`fuzz: ${signal}, removing the run's database and vhost`);
      cleanUp().then(
        () => process.exit(130),
        () => process.exit(130),
      );
    });
  }
  try {
    await client.connect();
    const fixtures = new Fixtures(client);
    await fixtures.seed();
    service = new FuzzService();
    await service.start(fixtures.actors);
    const served = await fetch(`${service.baseUrl}/openapi.json`);
    const api = await describeOperations((await served.json()) as object);
    const sweepStarted = Date.now();
    const sweep = await runFilterSweep(api, service);
    console.log(
      `filter sweep: ${sweep.sent} requests in ${((Date.now() - sweepStarted) / 1000).toFixed(1)} s, statuses ${JSON.stringify(Object.fromEntries(sweep.statuses))}, ${sweep.failures.length} failed`,
    );
    for (const failure of sweep.failures.slice(0, 5)) {
      console.log(
        describeFailure(
          failure,
          service.url(failure.request),
          'npm run test:fuzz -- --sweep-only',
        ),
      );
    }
    if (settings.sweepOnly) return sweep.failures.length > 0 ? 1 : 0;
    const started = Date.now();
    const outcome = await runFuzz(
      api,
      service,
      fixtures,
      new DataSnapshotter(client),
      settings,
    );
    const seconds = (Date.now() - started) / 1000;
    const login = await runLoginProfile(
      service,
      fixtures.actors,
      answerChecker(api.errorSchema),
    );
    console.log(
      `login profile: ${login.sent} wrong passwords for one account, statuses ${JSON.stringify(Object.fromEntries(login.statuses))}, ${login.problems.length} problems`,
    );
    for (const problem of login.problems.slice(0, 5))
      console.log(`  ${problem}`);
    const crash = await service.crashEvidence();

    console.log(outcome.stats.summary());
    console.log(`duration: ${seconds.toFixed(1)} s`);
    console.log(
      `service error records (5xx or unexpected): ${service.serverErrorLogs().length}`,
    );
    if (settings.full) console.log(`\n${outcome.stats.operationTable()}\n`);

    const replay = (path?: string) =>
      `npm run test:fuzz -- --seed ${settings.seed} --requests ${settings.requests}${path ? ` --path "${path}"` : ''}`;
    if (outcome.firstFailure) {
      console.log(`\nFAILED (seed ${settings.seed})\nfirst failing request:`);
      console.log(
        describeFailure(
          outcome.firstFailure,
          service.url(outcome.firstFailure.request),
          replay(),
        ),
      );
      if (
        outcome.minimalFailure &&
        outcome.minimalFailure !== outcome.firstFailure
      ) {
        console.log('smallest failing request after shrinking:');
        console.log(
          describeFailure(
            outcome.minimalFailure,
            service.url(outcome.minimalFailure.request),
            replay(outcome.counterexamplePath),
          ),
        );
      }
    }
    const serverErrors = service.serverErrorLogs();
    if (serverErrors.length > 0) {
      const shown = serverErrors
        .slice(0, 3)
        .map(r => JSON.stringify(r).slice(0, 1500));
      console.log(
        `\nthe service's first error records:\n  ${shown.join('\n  ')}`,
      );
    }
    if (crash.length > 0) {
      console.log(
        `\nthe service crashed or logged an uncaught error:\n  ${crash.join('\n  ')}`,
      );
    }
    const failed =
      outcome.firstFailure !== undefined ||
      crash.length > 0 ||
      sweep.failures.length > 0 ||
      login.problems.length > 0
        ? 1
        : 0;
    const passed = outcome.stats.total - (outcome.firstFailure ? 1 : 0);
    console.log(`fuzz: ${passed} passed, ${failed} failed`);
    return failed;
  } finally {
    await cleanUp();
  }
}

main().then(
  code => process.exit(code),
  error => {
    console.error(error);
    process.exit(1);
  },
);
