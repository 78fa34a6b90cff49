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
'use strict';
const {spawn} = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

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

// Seconds each file took in a recorded run (`npm run test:weights`). A file
// not recorded yet (new since) is estimated from its compiled size, heavier
// for the kinds of test that start services or a browser, at the recorded
// files' median seconds per weighted byte. Only the balance depends on it.
const WEIGHTS_FILE = path.join(__dirname, 'file-weights.json');
const recorded = fs.existsSync(WEIGHTS_FILE)
  ? JSON.parse(fs.readFileSync(WEIGHTS_FILE, 'utf8'))
  : {};

function sizeWeight(file) {
  const size = fs.statSync(path.join(ROOT, file)).size;
  if (/console/.test(file)) return size * 6;
  if (/\.(acceptance|integration)\.js$/.test(file)) return size * 2;
  return size;
}

const secondsPerByte = median(
  files
    .filter(file => recorded[file] > 0)
    .map(file => recorded[file] / sizeWeight(file)),
);

function median(values) {
  if (values.length === 0) return 1e-4; // about the suite's figure
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

function weight(file) {
  return recorded[file] ?? sizeWeight(file) * secondsPerByte;
}

const shards = Array.from({length: shardCount}, () => ({files: [], load: 0}));
for (const file of [...files].sort((a, b) => weight(b) - weight(a))) {
  const lightest = shards.reduce((a, b) => (b.load < a.load ? b : a));
  lightest.files.push(file);
  lightest.load += weight(file);
}

// MOCHA_RECORD_WEIGHTS=<file>: every shard writes the seconds of its files,
// merged into <file> at the end (what `npm run test:weights` keeps). Weights
// are read from file-weights.json whatever <file> is, and recorded under
// the same contention as CI's run: all shards side by side.
const recordTo = process.env.MOCHA_RECORD_WEIGHTS;
const timingsOf = index =>
  path.join(
    require('node:os').tmpdir(),
    `mocha-timings-${process.pid}-${index}.json`,
  );

const mochaBin = require.resolve('mocha/bin/mocha.js', {paths: [ROOT]});
const baseArgs = [
  '--no-config',
  ...config.require.flatMap(module => ['--require', module]),
  '--timeout',
  String(config.timeout),
  '--reporter',
  recordTo ? path.join(__dirname, 'file-timing-reporter.js') : config.reporter,
  ...process.argv.slice(2),
];

function runShard(shard, index) {
  return new Promise(resolve => {
    const live = index === 0;
    const child = spawn(
      process.execPath,
      [mochaBin, ...baseArgs, ...shard.files.sort()],
      {
        cwd: ROOT,
        env: recordTo
          ? {...process.env, MOCHA_FILE_TIMINGS: timingsOf(index)}
          : process.env,
        stdio: ['ignore', live ? 'inherit' : 'pipe', live ? 'inherit' : 'pipe'],
      },
    );
    const output = [];
    child.stdout?.on('data', chunk => output.push(chunk));
    child.stderr?.on('data', chunk => output.push(chunk));
    const started = Date.now();
    child.on('close', (code, signal) =>
      resolve({
        index,
        code: code ?? (signal ? 1 : 0),
        output,
        seconds: Math.round((Date.now() - started) / 1000),
      }),
    );
  });
}

async function main() {
  const started = Date.now();
  process.stdout.write(
    `mocha: ${files.length} files in ${shardCount} shard(s) (${shards.map(s => s.files.length).join(' + ')} files, ` +
      `about ${shards.map(s => Math.round(s.load)).join(' + ')} s)\n`,
  );
  const results = await Promise.all(shards.map(runShard));
  for (const result of results.slice(1)) {
    process.stdout.write(
      `\n==== mocha shard ${result.index + 1} of ${shardCount} ====\n`,
    );
    for (const chunk of result.output) process.stdout.write(chunk);
  }
  if (recordTo) writeWeights(results);
  const failed = results.filter(result => result.code !== 0);
  process.stdout.write(
    `\nmocha: ${shardCount} shard(s) in ${Math.round((Date.now() - started) / 1000)} s ` +
      `(${results.map(r => r.seconds).join(' s, ')} s); ` +
      (failed.length === 0
        ? 'all passed\n'
        : `failed: shard ${failed.map(r => r.index + 1).join(', ')}\n`),
  );
  process.exitCode = failed[0]?.code ?? 0;
}

function writeWeights(results) {
  // Files this run did not time keep their recorded seconds (a run of a
  // few files refreshes those only); files that no longer exist are dropped.
  const seconds = Object.fromEntries(
    Object.entries(recorded).filter(([file]) => files.includes(file)),
  );
  for (const {index} of results) {
    const file = timingsOf(index);
    if (!fs.existsSync(file)) continue;
    Object.assign(seconds, JSON.parse(fs.readFileSync(file, 'utf8')));
    fs.rmSync(file);
  }
  const sorted = Object.fromEntries(
    Object.keys(seconds)
      .sort()
      .map(file => [file, Math.round(seconds[file] * 10) / 10]),
  );
  fs.writeFileSync(recordTo, JSON.stringify(sorted, null, 2) + '\n');
  process.stdout.write(`mocha: seconds per file written to ${recordTo}\n`);
}

main().catch(error => {
  process.stderr.write(`${error.stack}\n`);
  process.exitCode = 1;
});
