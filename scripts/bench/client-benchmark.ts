import {execFileSync, execSync} from 'node:child_process';
import {readdirSync, readFileSync, writeFileSync} from 'node:fs';
import {rm, writeFile} from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {performance} from 'node:perf_hooks';
import * as prettier from 'prettier';
import winston from 'winston';
import {DIST, loadService} from './service-build';
import {defineSyntheticResources} from './synthetic-resources';

/**
 * npm run bench:client [-- --resources 600 --runs 3 --no-compile --no-write]
 *
 * Boots the real application with `--resources` synthetic resources on top of
 * its own, through the same generic CRUD factory, and measures boot, the
 * OpenAPI document and the client generation, each run in a fresh process;
 * the medians go into BENCHMARKS.md.
 */

const PROJECT_ROOT = path.resolve(DIST, '..');
const BENCHMARKS_FILE = path.join(PROJECT_ROOT, 'BENCHMARKS.md');
const START_MARK = '<!-- bench:client:start -->';
const END_MARK = '<!-- bench:client:end -->';
/** Inside the project, so that the generated code resolves @angular/*. */
const GENERATED_DIR = path.join(DIST, 'bench-client');
const LOAD_BEFORE = os.loadavg();

interface Measurement {
  controllers: number;
  operations: number;
  schemas: number;
  /** Loading the service's compiled modules. */
  requireMs: number;
  /** Declaring the synthetic models and resources. */
  defineMs: number;
  /** Constructing the application, registering everything, listening. */
  bootMs: number;
  /** Of which: the application with its own resources and components. */
  constructMs: number;
  /** Of which: the synthetic controller and repository classes (CRUD factory). */
  controllersMs: number;
  /** Of which: binding them to the application. */
  registerMs: number;
  /** Of which: app.start(): routes, specs, HTTP listen. */
  startMs: number;
  /** From `node` starting to the port listening. */
  processMs: number;
  firstDocumentMs: number;
  documentMs: number;
  documentBytes: number;
  /** describeApi(): the document the generator reads, in process. */
  describeMs: number;
  /** ng-openapi-gen (and the README) writing the whole client. */
  generationMs: number;
  generatedFiles: number;
}

const since = (start: number) => Math.round(performance.now() - start);

function option(name: string, fallback: number): number {
  const index = process.argv.indexOf(`--${name}`);
  return index < 0 ? fallback : Number(process.argv[index + 1]);
}

async function timed<T>(work: () => Promise<T>): Promise<[T, number]> {
  const start = performance.now();
  const result = await work();
  return [result, since(start)];
}

/** One run, in this process: prints its Measurement as JSON. */
async function measure(resources: number): Promise<Measurement> {
  const [service, requireMs] = await timed(loadService);
  const [synthetic, defineMs] = await timed(async () =>
    defineSyntheticResources(service, resources),
  );

  const config = {
    ...service.loadConfig({}),
    appMode: 'api' as const,
    host: '127.0.0.1',
    port: 0,
  };
  const logger = service.createLogger({
    level: 'error',
    service: 'bench',
    transports: [new winston.transports.Console({silent: true})],
  });
  const [app, constructMs] = await timed(
    async () => new service.TaskSchedulerApplication(config, logger),
  );
  const [classes, controllersMs] = await timed(async () =>
    synthetic.map(resource => ({
      repository: service.defineRepository(resource.model),
      controller: service.defineCrudController(resource),
    })),
  );
  const [, registerMs] = await timed(async () => {
    for (const {repository, controller} of classes) {
      app.repository(repository);
      app.controller(controller);
    }
  });
  const [, startMs] = await timed(() => app.start());
  const bootMs = constructMs + controllersMs + registerMs + startMs;
  const processMs = Math.round(performance.now());

  const url = `${app.restServer.url}/openapi.json`;
  const fetchDocument = () => fetch(url).then(res => res.text());
  const [served, firstDocumentMs] = await timed(fetchDocument);
  const warm: number[] = [];
  for (let i = 0; i < 5; i++) warm.push((await timed(fetchDocument))[1]);

  const [document, describeMs] = await timed(() => service.describeApi(app));
  await rm(GENERATED_DIR, {recursive: true, force: true});
  const [, generationMs] = await timed(() =>
    service.generateClient(document, GENERATED_DIR),
  );
  await app.stop();

  const operations = Object.values(document.paths).flatMap(item =>
    Object.keys(item),
  ).length;
  const generatedFiles = readdirSync(GENERATED_DIR, {
    recursive: true,
    withFileTypes: true,
  }).filter(entry => entry.isFile()).length;
  return {
    controllers: app.findByTag('controller').length,
    operations,
    schemas: Object.keys(document.components?.schemas ?? {}).length,
    requireMs,
    defineMs,
    bootMs,
    constructMs,
    controllersMs,
    registerMs,
    startMs,
    processMs,
    firstDocumentMs,
    documentMs: median(warm),
    documentBytes: Buffer.byteLength(served),
    describeMs,
    generationMs,
    generatedFiles,
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** Strict type check of the generated 600-service client, as an app would. */
async function compileGenerated(): Promise<number> {
  const tsconfig = path.join(DIST, 'bench-client.tsconfig.json');
  await writeFile(
    tsconfig,
    JSON.stringify({
      extends: '../tsconfig.client.json',
      compilerOptions: {noEmit: true},
      include: ['bench-client/**/*.ts'],
    }),
  );
  const tsc = require.resolve('typescript/bin/tsc');
  const start = performance.now();
  execFileSync(process.execPath, [tsc, '-p', tsconfig], {stdio: 'inherit'});
  return since(start);
}

function machine(): string[] {
  const free = (() => {
    try {
      return execSync('free -h').toString().split('\n').slice(0, 2);
    } catch {
      return [`total memory ${Math.round(os.totalmem() / 2 ** 30)} GiB`];
    }
  })();
  const version = (pkg: string) =>
    (
      JSON.parse(
        readFileSync(
          path.join(PROJECT_ROOT, 'node_modules', pkg, 'package.json'),
          'utf8',
        ),
      ) as {version: string}
    ).version;
  return [
    `- \`nproc\`: ${os.availableParallelism()} (${os.cpus()[0]?.model ?? 'unknown CPU'})`,
    '- `free -h`:',
    '  ```',
    ...free.map(line => `  ${line}`),
    '  ```',
    `- Node.js ${process.version} on ${os.type()} ${os.release()}`,
    `- load average before the runs (1, 5, 15 min): ${LOAD_BEFORE.map(load =>
      load.toFixed(2),
    ).join(', ')} (other work on the machine skews the figures)`,
    `- @loopback/rest ${version('@loopback/rest')}, ng-openapi-gen ${version('ng-openapi-gen')}, TypeScript ${version('typescript')}, @angular/core ${version('@angular/core')}`,
  ];
}

function report(
  resources: number,
  runs: Measurement[],
  compileMs: number | undefined,
): string[] {
  const pick = (key: keyof Measurement) => median(runs.map(run => run[key]));
  const all = (key: keyof Measurement) => runs.map(run => run[key]).join(' / ');
  const verdict = (value: number, target: number) =>
    value < target ? 'met' : '**missed**';
  const first = runs[0];
  const rows: Array<[string, keyof Measurement, number?]> = [
    ['Boot: construct, register every controller, listen', 'bootMs', 3000],
    ['- of which: the application with its own resources', 'constructMs'],
    [
      '- of which: defining the synthetic controllers (CRUD factory)',
      'controllersMs',
    ],
    ['- of which: binding them to the application', 'registerMs'],
    ['- of which: `app.start()` (routes, controller specs, listen)', 'startMs'],
    ['Loading the compiled service modules', 'requireMs'],
    [`Declaring the ${resources} synthetic models`, 'defineMs'],
    ['`node` start to port listening, all of the above', 'processMs'],
    ['`GET /api/openapi.json`, warm (median of 5)', 'documentMs', 1000],
    ['`GET /api/openapi.json`, first request', 'firstDocumentMs', 1000],
    ['Document for the generator (`describeApi`)', 'describeMs'],
    ['Client generation (ng-openapi-gen + README)', 'generationMs', 60000],
  ];
  return [
    `Run on ${new Date().toISOString().slice(0, 10)} with ${resources} synthetic resources plus the service's own: ${first.controllers} controllers, ${first.operations} operations, ${first.schemas} schemas; document ${(first.documentBytes / 2 ** 20).toFixed(1)} MiB; ${first.generatedFiles} generated files. Medians of ${runs.length} runs, each in a fresh process.`,
    '',
    '| Figure | Median | Runs (ms) | Target |',
    '| --- | ---: | ---: | --- |',
    ...rows.map(([label, key, target]) => {
      const value = pick(key);
      const goal =
        target === undefined
          ? ''
          : `< ${target / 1000} s: ${verdict(value, target)}`;
      return `| ${label} | ${value} ms | ${all(key)} | ${goal} |`;
    }),
    ...(compileMs === undefined
      ? []
      : [
          `| \`tsc\` strict type check of the generated client (once) | ${compileMs} ms | | |`,
        ]),
    '',
    'Machine:',
    '',
    ...machine(),
  ];
}

/** Replaces the marked section of BENCHMARKS.md, formatted as prettier would. */
async function record(lines: string[]): Promise<void> {
  const current = readFileSync(BENCHMARKS_FILE, 'utf8');
  const start = current.indexOf(START_MARK);
  const end = current.indexOf(END_MARK);
  if (start < 0 || end < start) {
    throw new Error(`${BENCHMARKS_FILE} lacks ${START_MARK} ... ${END_MARK}`);
  }
  const updated = [
    current.slice(0, start + START_MARK.length),
    '',
    ...lines,
    '',
    current.slice(end),
  ].join('\n');
  const options = await prettier.resolveConfig(BENCHMARKS_FILE);
  writeFileSync(
    BENCHMARKS_FILE,
    await prettier.format(updated, {...options, filepath: BENCHMARKS_FILE}),
  );
}

async function main(): Promise<void> {
  const resources = option('resources', 600);
  if (process.argv.includes('--measure')) {
    process.stdout.write(`${JSON.stringify(await measure(resources))}\n`);
    return;
  }
  const runs: Measurement[] = [];
  for (let run = 1; run <= option('runs', 3); run++) {
    const output = execFileSync(
      process.execPath,
      [__filename, '--measure', '--resources', String(resources)],
      {maxBuffer: 2 ** 20},
    ).toString();
    const measurement = JSON.parse(output.trim().split('\n').pop()!);
    process.stderr.write(`run ${run}: ${JSON.stringify(measurement)}\n`);
    runs.push(measurement);
  }
  const compileMs = process.argv.includes('--no-compile')
    ? undefined
    : await compileGenerated();
  await rm(GENERATED_DIR, {recursive: true, force: true});
  const lines = report(resources, runs, compileMs);
  process.stdout.write(`${lines.join('\n')}\n`);
  if (!process.argv.includes('--no-write')) await record(lines);
}

main().catch(error => {
  process.stderr.write(`${error?.stack ?? error}\n`);
  process.exit(1);
});
