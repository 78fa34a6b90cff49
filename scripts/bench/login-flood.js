#!/usr/bin/env node
// Login flood benchmark (issue 20):
//   npm run bench:login [-- --seconds 60 --connections 64]
// A real API process (APP_MODE=api, production settings) on a database and
// vhost of its own. --connections loops post wrong passwords to
// POST /api/auth/login as fast as they are answered, for --seconds; beside
// them one client sends authenticated GET /api/schedulers one after another.
// Prints the flood's answers by status and the other requests' latency
// percentiles (goal: p99 under 100 ms). Removes everything at the end.
// --root DIR runs the API built in DIR (to compare with another build).
'use strict';
const os = require('node:os');
const path = require('node:path');
const {parseArgs} = require('node:util');
const {createBenchEnvironment} = require('./bench-environment');
const {percentile, startApiProcess} = require('./api-process');
const {createPool} = require('../../dist/database/pg-pool');
const {hashPassword} = require('../../dist/auth/password-hasher');

const {values} = parseArgs({
  options: {
    seconds: {type: 'string', default: '60'},
    connections: {type: 'string', default: '64'},
    root: {type: 'string', default: path.resolve(__dirname, '../..')},
  },
});
const seconds = Number(values.seconds);
const connections = Number(values.connections);
if (!(seconds > 0) || !Number.isInteger(connections) || connections < 1) {
  throw new Error('--seconds and --connections must be positive');
}
const PASSWORD = 'bench-password-long-enough';

async function main() {
  const env = await createBenchEnvironment();
  const pool = createPool(env.databaseUrl, env.logger, 2);
  const api = startApiProcess(env, values.root);
  try {
    await pool.query(
      `INSERT INTO app_user (email, name, password_hash, role)
       VALUES ('victim@example.com', 'Victim', $1, 'admin'),
              ('reader@example.com', 'Reader', $1, 'viewer')`,
      [await hashPassword(PASSWORD)],
    );
    const base = await api.url;
    const login = await fetch(`${base}/auth/login`, {
      method: 'POST',
      headers: {'content-type': 'application/json'},
      body: JSON.stringify({email: 'reader@example.com', password: PASSWORD}),
    });
    const {token} = await login.json();
    const until = Date.now() + seconds * 1000;
    const statuses = {};
    const flood = Array.from({length: connections}, async () => {
      while (Date.now() < until) {
        const res = await fetch(`${base}/auth/login`, {
          method: 'POST',
          headers: {'content-type': 'application/json'},
          body: JSON.stringify({
            email: 'victim@example.com',
            password: 'guess-' + Math.random(),
          }),
        });
        await res.arrayBuffer();
        statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      }
    });
    const latencies = [];
    const others = {};
    const probe = (async () => {
      while (Date.now() < until) {
        const started = performance.now();
        const res = await fetch(
          `${base}/schedulers?filter=${encodeURIComponent('{"limit":10}')}`,
          {
            headers: {authorization: `Bearer ${token}`},
          },
        );
        await res.arrayBuffer();
        latencies.push(performance.now() - started);
        others[res.status] = (others[res.status] ?? 0) + 1;
      }
    })();
    const cpuBefore = process.cpuUsage();
    await Promise.all([...flood, probe]);
    latencies.sort((a, b) => a - b);
    const round = ms => Math.round(ms * 10) / 10;
    process.stdout.write(
      `${JSON.stringify(
        {
          machine: `${os.cpus().length} cores (${os.cpus()[0].model.trim()}), node ${process.version}, load ${os.loadavg()[0].toFixed(1)}`,
          seconds,
          flood_connections: connections,
          flood_answers_by_status: statuses,
          flood_requests_per_s: Math.round(
            Object.values(statuses).reduce((a, b) => a + b, 0) / seconds,
          ),
          other_requests: latencies.length,
          other_answers_by_status: others,
          other_p50_ms: percentile(latencies, 0.5),
          other_p99_ms: percentile(latencies, 0.99),
          other_max_ms: round(latencies[latencies.length - 1]),
          bench_client_cpu_s: round(
            (process.cpuUsage(cpuBefore).user +
              process.cpuUsage(cpuBefore).system) /
              1e6,
          ),
        },
        null,
        2,
      )}\n`,
    );
  } finally {
    api.child.kill('SIGTERM');
    await pool.end();
    await env.remove();
  }
}

main().catch(error => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
