'use strict';
// A real API process for the API benchmarks: production settings, every
// request logged, on the benchmark's own database and vhost.
const path = require('node:path');
const {spawn} = require('node:child_process');
const {randomBytes} = require('node:crypto');

/**
 * Starts `dist/index.js` of `root` as the API; `url` resolves to its base URL.
 * `nodeFlags` come before the script (`--cpu-prof`).
 */
function startApiProcess(
  env,
  root = path.resolve(__dirname, '../..'),
  nodeFlags = [],
) {
  const child = spawn(
    process.execPath,
    [...nodeFlags, path.join(root, 'dist/index.js')],
    {
      env: {
        PATH: process.env.PATH,
        APP_MODE: 'api',
        NODE_ENV: 'production',
        // The production default: every request is logged.
        LOG_LEVEL: 'info',
        PORT: '0',
        DATABASE_URL: env.databaseUrl,
        AMQP_URL: env.amqpUrl,
        JWT_SECRET: randomBytes(32).toString('hex'),
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const url = new Promise((resolve, reject) => {
    let seen = '';
    child.stdout.on('data', chunk => {
      if (seen === null) return;
      seen += chunk.toString();
      const line = seen.split('\n').find(l => l.includes('Service started'));
      if (line) {
        seen = null;
        resolve(String(JSON.parse(line).url).replace(/\/$/, ''));
      } else if (seen.length > 1e6) seen = seen.slice(-1e4);
    });
    child.once('exit', code => reject(new Error(`API exited (${code})`)));
  });
  return {child, url};
}

/** Latency percentile of sorted milliseconds, rounded to 0.1 ms. */
function percentile(sorted, p) {
  const ms = sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
  return Math.round(ms * 10) / 10;
}

module.exports = {startApiProcess, percentile};
