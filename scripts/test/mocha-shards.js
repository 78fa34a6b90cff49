#!/usr/bin/env node
// The mocha suite as MOCHA_SHARDS processes side by side (default 3 on the
// CI machine's two cores): most tests wait on PostgreSQL, RabbitMQ, child
// processes and timers, so two processes leave the cores idle a good part of
// the time and three keep them busy (docs/testing.md has the figures).
// Each process is a whole mocha run with the usual root hooks, so it has a
// database and a RabbitMQ vhost of its own (named after its pid) and removes
// them at its end: shards never see each other's data. MOCHA_SHARDS=1 runs
// the suite in one process, as `npx mocha` does. Extra arguments go to every
// shard (e.g. --grep). Shard 1 prints as it goes; the others print whole when
// they end, each under its own heading; the exit code is the first non-zero one.
// The failures of every failed shard are printed again at the very end: a CI
// log is often read from its tail, and shard 1's failures would otherwise sit
// thousands of lines above it.
'use strict';
const {spawn} = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const {planShards, readWeights, writeWeights} = require('./shard-plan');

const ROOT = path.resolve(__dirname, '../..');
const config = require(path.join(ROOT, '.mocharc.json'));
const shardCount = Number(process.env.MOCHA_SHARDS ?? 3);
if (!Number.isInteger(shardCount) || shardCount < 1 || shardCount > 8) {
  process.stderr.write('MOCHA_SHARDS must be an integer from 1 to 8\n');
  process.exit(2);
}

// fs.globSync is Node 22+; on older lines, mocha's own glob.
const globSync =
  fs.globSync ??
  require(require.resolve('glob', {paths: [require.resolve('mocha')]})).sync;
const files = config.spec
  .flatMap(pattern => globSync(pattern, {cwd: ROOT}))
  .sort();
if (files.length === 0) {
  process.stderr.write('no test files under dist/: run npm run build first\n');
  process.exit(2);
}

const recorded = readWeights();
const shards = planShards(files, shardCount, recorded, ROOT);

// MOCHA_RECORD_WEIGHTS=<file>: every shard writes the seconds of its files,
// merged into <file> at the end (what `npm run test:weights` keeps), only if
// every shard passed. A narrowed run would record a file's matching tests
// as the whole file, so it is refused. Recorded with all shards side by
// side: the contention CI's run has.
const recordTo = process.env.MOCHA_RECORD_WEIGHTS
  ? path.resolve(process.env.MOCHA_RECORD_WEIGHTS)
  : undefined;
const NARROWING = /^(-g|-f|-i|--grep|--fgrep|--invert|--reporter|-R)(=|$)/;
if (recordTo && process.argv.slice(2).some(arg => NARROWING.test(arg))) {
  process.stderr.write(
    'MOCHA_RECORD_WEIGHTS records whole files: no --grep, --fgrep, --invert or --reporter\n',
  );
  process.exit(2);
}
const timingsDir = recordTo
  ? fs.mkdtempSync(path.join(os.tmpdir(), 'mocha-timings-'))
  : undefined;
const timingsOf = index => path.join(timingsDir, `shard-${index}.json`);
process.on('exit', () => {
  if (timingsDir) fs.rmSync(timingsDir, {recursive: true, force: true});
});

const mochaBin = require.resolve('mocha/bin/mocha.js', {paths: [ROOT]});
const baseArgs = [
  '--no-config',
  ...config.require.flatMap(module => ['--require', module]),
  '--timeout',
  String(config.timeout),
  '--reporter',
  recordTo ? path.join(__dirname, 'file-timing-reporter.js') : config.reporter,
  // Every shard writes to a pipe; shard 1 keeps its colours on a terminal.
  ...(process.stdout.isTTY ? ['--color'] : []),
  ...process.argv.slice(2),
];

function runShard(shard, index) {
  return new Promise(resolve => {
    const live = index === 0;
    const child = spawn(
      process.execPath,
      [mochaBin, ...baseArgs, ...shard.files],
      {
        cwd: ROOT,
        env: recordTo
          ? {...process.env, MOCHA_FILE_TIMINGS: timingsOf(index)}
          : process.env,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    children.add(child);
    const output = [];
    child.stdout.on('data', chunk => {
      output.push(chunk);
      if (live) process.stdout.write(chunk);
    });
    child.stderr.on('data', chunk => {
      output.push(chunk);
      if (live) process.stderr.write(chunk);
    });
    const started = Date.now();
    child.on('close', (code, signal) => {
      children.delete(child);
      resolve({
        index,
        code: code ?? (signal ? 1 : 0),
        output,
        seconds: Math.round((Date.now() - started) / 1000),
      });
    });
  });
}

// A shard outlives its parent otherwise (and keeps its database and vhost
// until it ends): the parent's SIGINT or SIGTERM is passed on to each.
const children = new Set();
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    for (const child of children) child.kill(signal);
    process.exitCode = 130;
  });
}

async function main() {
  const started = Date.now();
  process.stdout.write(
    `mocha: ${files.length} files in ${shards.length} shard(s) (${shards.map(s => s.files.length).join(' + ')} files, ` +
      `about ${shards.map(s => Math.round(s.load)).join(' + ')} s)\n`,
  );
  const results = await Promise.all(shards.map(runShard));
  for (const result of results.slice(1)) {
    process.stdout.write(
      `\n==== mocha shard ${result.index + 1} of ${shards.length} ====\n`,
    );
    for (const chunk of result.output) process.stdout.write(chunk);
  }
  const failed = results.filter(result => result.code !== 0);
  for (const result of failed) {
    process.stdout.write(
      `\n==== failures of mocha shard ${result.index + 1} of ${shards.length} ====\n` +
        failuresOf(Buffer.concat(result.output).toString('utf8')),
    );
  }
  if (recordTo) recordWeights(failed.length === 0 ? results : []);
  process.stdout.write(
    `\nmocha: ${shards.length} shard(s) in ${Math.round((Date.now() - started) / 1000)} s ` +
      `(${results.map(r => r.seconds).join(' s, ')} s); ` +
      (failed.length === 0
        ? 'all passed\n'
        : `failed: shard ${failed.map(r => r.index + 1).join(', ')}\n`),
  );
  process.exitCode = failed[0]?.code ?? process.exitCode ?? 0;
}

// Mocha's closing section ("N failing" and each failure's stack), or the
// last lines when a shard died before it could write one.
function failuresOf(text) {
  const lines = text.split('\n');
  // eslint-disable-next-line no-control-regex
  const plain = line => line.replace(/\x1b\[[0-9;]*m/g, '');
  const start = lines.findLastIndex(line =>
    /^\s+\d+ failing\s*$/.test(plain(line)),
  );
  return `${lines
    .slice(start >= 0 ? start : -60)
    .join('\n')
    .trimEnd()}\n`;
}

function recordWeights(passed) {
  if (passed.length === 0) {
    process.stdout.write(`mocha: a shard failed, ${recordTo} left as it was\n`);
    return;
  }
  const timed = {};
  for (const {index} of passed) {
    Object.assign(timed, JSON.parse(fs.readFileSync(timingsOf(index), 'utf8')));
  }
  writeWeights(recordTo, files, recorded, timed);
  process.stdout.write(`mocha: seconds per file written to ${recordTo}\n`);
}

main().catch(error => {
  process.stderr.write(`${error.stack}\n`);
  process.exitCode = 1;
});
