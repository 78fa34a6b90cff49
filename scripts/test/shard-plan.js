// How mocha-shards.js shares the test files out: by the seconds each took
// in a recorded run (file-weights.json, `npm run test:weights`). A file not
// recorded yet (new since) is estimated from its compiled size, heavier for
// the kinds of test that start services or a browser, at the recorded
// files' median seconds per weighted byte. Only the balance depends on the
// weights, so a damaged weights file is reported and ignored, never fatal.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const WEIGHTS_FILE = path.join(__dirname, 'file-weights.json');

/** The recorded seconds by file: finite numbers ≥ 0 only; {} when unreadable. */
function readWeights(file = WEIGHTS_FILE) {
  if (!fs.existsSync(file)) return {};
  let parsed;
  try {
    parsed = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (error) {
    process.stderr.write(
      `mocha: ${file} is unreadable (${error.message}): files shared out by size\n`,
    );
    return {};
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    process.stderr.write(
      `mocha: ${file} is not an object: files shared out by size\n`,
    );
    return {};
  }
  return Object.fromEntries(
    Object.entries(parsed).filter(
      ([, seconds]) => Number.isFinite(seconds) && seconds >= 0,
    ),
  );
}

/** Shards of files, heaviest first onto the lightest shard; none empty. */
function planShards(files, shardCount, recorded, root) {
  const sizeWeight = file => {
    const size = fs.statSync(path.join(root, file)).size;
    if (/console/.test(file)) return size * 6;
    if (/\.(acceptance|integration)\.js$/.test(file)) return size * 2;
    return size;
  };
  const perByte = median(
    files
      .filter(file => recorded[file] > 0)
      .map(file => recorded[file] / sizeWeight(file)),
  );
  const weights = new Map(
    files.map(file => [file, recorded[file] ?? sizeWeight(file) * perByte]),
  );
  const shards = Array.from(
    {length: Math.min(shardCount, files.length)},
    () => ({files: [], load: 0}),
  );
  const byWeight = [...files].sort((a, b) => weights.get(b) - weights.get(a));
  for (const file of byWeight) {
    // Ties (files recorded at 0 s) go to the shard with fewer files.
    const lightest = shards.reduce((a, b) =>
      b.load < a.load || (b.load === a.load && b.files.length < a.files.length)
        ? b
        : a,
    );
    lightest.files.push(file);
    lightest.load += weights.get(file);
  }
  for (const shard of shards) shard.files.sort();
  return shards;
}

function median(values) {
  if (values.length === 0) return 1e-4; // about the suite's own figure
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/**
 * Writes the merged weights: files this run timed get their new seconds,
 * the others keep theirs, files that no longer exist are dropped. Written
 * to a temporary file and renamed, so a crash never leaves half a file.
 */
function writeWeights(target, files, recorded, timed) {
  const seconds = {};
  for (const file of files) {
    const value = timed[file] ?? recorded[file];
    if (value !== undefined) seconds[file] = Math.round(value * 10) / 10;
  }
  const partial = `${target}.${process.pid}.tmp`;
  fs.writeFileSync(partial, JSON.stringify(seconds, null, 2) + '\n');
  fs.renameSync(partial, target);
}

module.exports = {WEIGHTS_FILE, readWeights, planShards, writeWeights};
