// A mocha reporter: the spec reporter's output, and, when MOCHA_FILE_TIMINGS
// names a file, the seconds each test file took (its suites, hooks included)
// written there as JSON at the end of the run. `npm run test:weights` uses it
// to refresh scripts/test/file-weights.json, which balances the shards.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const Mocha = require('mocha');

const ROOT = path.resolve(__dirname, '../..');

class FileTimingReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const out = process.env.MOCHA_FILE_TIMINGS;
    if (!out) return;
    const seconds = {};
    const started = new Map();
    runner.on('suite', suite => {
      if (suite.file && suite.parent?.root) started.set(suite, Date.now());
    });
    runner.on('suite end', suite => {
      const start = started.get(suite);
      if (start === undefined) return;
      const file = path.relative(ROOT, suite.file);
      seconds[file] = (seconds[file] ?? 0) + (Date.now() - start) / 1000;
    });
    runner.once('end', () => {
      fs.writeFileSync(out, JSON.stringify(seconds, null, 2) + '\n');
    });
  }
}

module.exports = FileTimingReporter;
