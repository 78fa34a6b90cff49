#!/usr/bin/env node
// The mocha suite as MOCHA_SHARDS processes side by side (default 2, the CI
// machine's cores): most tests wait on PostgreSQL, RabbitMQ, child processes
// and timers, so two processes finish the suite in well under the time of one.
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
const shardCount = Number(process.env.MOCHA_SHARDS ?? 2);
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

/**
 * A file's expected cost: its compiled size, heavier for the kinds of test
 * that start services or a browser. Only the balance depends on it.
 */
function weight(file) {
  const size = fs.statSync(path.join(ROOT, file)).size;
  if (/console/.test(file)) return size * 6;
  if (/\.(acceptance|integration)\.js$/.test(file)) return size * 2;
  return size;
}

const shards = Array.from({length: shardCount}, () => ({files: [], load: 0}));
for (const file of [...files].sort((a, b) => weight(b) - weight(a))) {
  const lightest = shards.reduce((a, b) => (b.load < a.load ? b : a));
  lightest.files.push(file);
  lightest.load += weight(file);
}

const mochaBin = require.resolve('mocha/bin/mocha.js', {paths: [ROOT]});
const baseArgs = [
  '--no-config',
  ...config.require.flatMap(module => ['--require', module]),
  '--timeout',
  String(config.timeout),
  '--reporter',
  config.reporter,
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
        stdio: ['ignore', live ? 'inherit' : 'pipe', live ? 'inherit' : 'pipe'],
      },
    );
    const output = [];
    child.stdout?.on('data', chunk => output.push(chunk));
    child.stderr?.on('data', chunk => output.push(chunk));
    child.on('close', (code, signal) =>
      resolve({index, code: code ?? (signal ? 1 : 0), output}),
    );
  });
}

async function main() {
  const started = Date.now();
  process.stdout.write(
    `mocha: ${files.length} files in ${shardCount} shard(s) (${shards.map(s => s.files.length).join(' + ')})\n`,
  );
  const results = await Promise.all(shards.map(runShard));
  for (const result of results.slice(1)) {
    process.stdout.write(
      `\n==== mocha shard ${result.index + 1} of ${shardCount} ====\n`,
    );
    for (const chunk of result.output) process.stdout.write(chunk);
  }
  const failed = results.filter(result => result.code !== 0);
  process.stdout.write(
    `\nmocha: ${shardCount} shard(s) in ${Math.round((Date.now() - started) / 1000)} s; ` +
      (failed.length === 0
        ? 'all passed\n'
        : `failed: shard ${failed.map(r => r.index + 1).join(', ')}\n`),
  );
  process.exitCode = failed[0]?.code ?? 0;
}

main().catch(error => {
  process.stderr.write(`${error.stack}\n`);
  process.exitCode = 1;
});
