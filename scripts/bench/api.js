#!/usr/bin/env node
// API benchmark: npm run bench:api [-- --schedulers 100000 --seconds 10 --connections 32]
// A real API process (APP_MODE=api, production settings) on a database of its
// own with --schedulers schedulers. For each request kind, --connections
// clients send requests back to back for --seconds: /api/ping, an
// authenticated GET /api/schedulers/{id}, and searches (?q=) for a rare and a
// common term. Prints requests/s and latency percentiles per kind, and the
// plan PostgreSQL picks for the search. --profile DIR: the API process writes
// a --cpu-prof profile there; --only ping,by-id limits the request kinds.
// --client wrk|fetch: the load generator; wrk (Debian's package, a C
// program that leaves the cores to the API) when installed, else Node's fetch.
// --warmup SECONDS (default 3): each kind first runs that long unmeasured, so
// its figures are the warm process's (V8 has compiled its paths, the pools
// are full), not the first seconds' of whichever kind happens to go first.
// Each kind also reports the API process's CPU per request (/proc, 10 ms
// ticks), and by-id ÷ ping is given from that CPU too (by_id_vs_ping_cpu).
'use strict';
const os = require('node:os');
const path = require('node:path');
const {execFile, execFileSync} = require('node:child_process');
const {parseArgs} = require('node:util');
const {createBenchEnvironment} = require('./bench-environment');
const {percentile, startApiProcess} = require('./api-process');
const {cpuSeconds} = require('./service-processes');
const {createPool} = require('../../dist/database/pg-pool');
const {hashPassword} = require('../../dist/auth/password-hasher');

const {values} = parseArgs({
  options: {
    schedulers: {type: 'string', default: '100000'},
    seconds: {type: 'string', default: '10'},
    connections: {type: 'string', default: '32'},
    profile: {type: 'string'},
    only: {type: 'string'},
    client: {type: 'string'},
    warmup: {type: 'string', default: '3'},
  },
});
const hasWrk = () => {
  try {
    execFileSync('wrk', ['--version'], {stdio: 'ignore'});
    return true;
  } catch (error) {
    // wrk --version prints its banner and exits with 1.
    return error.code !== 'ENOENT';
  }
};
const client = values.client ?? (hasWrk() ? 'wrk' : 'fetch');
if (!['wrk', 'fetch'].includes(client)) {
  process.stderr.write('--client takes wrk or fetch\n');
  process.exit(2);
}
const schedulers = Number(values.schedulers);
const seconds = Number(values.seconds);
const connections = Number(values.connections);
const warmupSeconds = Number(values.warmup);
if (!Number.isInteger(warmupSeconds) || warmupSeconds < 0) {
  process.stderr.write('--warmup takes a whole number of seconds (0: none)\n');
  process.exit(2);
}
const KINDS = ['ping', 'by-id', 'search-rare', 'search-common'];
const only = values.only ? values.only.split(',') : KINDS;
if (only.some(kind => !KINDS.includes(kind))) {
  process.stderr.write(`--only takes a list of ${KINDS.join(', ')}\n`);
  process.exit(2);
}
const PASSWORD = 'bench-password-long-enough';

const WRK_UNITS_MS = {us: 0.001, ms: 1, s: 1000};

/** wrk's figures: requests/s, the 50 % and 99 % latencies, non-2xx answers. */
async function measureWithWrk(url, headers, duration) {
  const args = ['-t2', `-c${connections}`, `-d${duration}s`, '--latency'];
  for (const [name, value] of Object.entries(headers)) {
    args.push('-H', `${name}: ${value}`);
  }
  const out = await new Promise((resolve, reject) =>
    execFile('wrk', [...args, url], (error, stdout) =>
      error ? reject(error) : resolve(stdout),
    ),
  );
  const latency = p => {
    const [, value, unit] = new RegExp(
      `^\\s+${p}%\\s+([\\d.]+)(us|ms|s)`,
      'm',
    ).exec(out);
    return Math.round(Number(value) * WRK_UNITS_MS[unit] * 10) / 10;
  };
  const total = Number(/(\d+) requests in/.exec(out)[1]);
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
  const errors = /Socket errors: (.*)/.exec(out)?.[1];
  return {
    requests_per_s: Math.round(
      Number(/Requests\/sec:\s+([\d.]+)/.exec(out)[1]),
    ),
    p50_ms: latency(50),
    p99_ms: latency(99),
    statuses: {'2xx': total - non2xx, other: non2xx},
    ...(errors ? {socket_errors: errors} : {}),
  };
}

async function measure(url, headers, duration = seconds) {
  if (client === 'wrk') return measureWithWrk(url, headers, duration);
  const until = Date.now() + duration * 1000;
  const latencies = [];
  const statuses = {};
  await Promise.all(
    Array.from({length: connections}, async () => {
      while (Date.now() < until) {
        const started = performance.now();
        const res = await fetch(url, {headers});
        await res.arrayBuffer();
        latencies.push(performance.now() - started);
        statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  return {
    requests_per_s: Math.round(latencies.length / duration),
    p50_ms: percentile(latencies, 0.5),
    p99_ms: percentile(latencies, 0.99),
    statuses,
  };
}

/** The API process's CPU (seconds) spent per answered request, in µs. */
function cpuPerRequest(cpu, statuses) {
  const answered = Object.values(statuses).reduce((a, b) => a + b, 0);
  return answered > 0 ? Math.round((cpu * 1e6) / answered) : null;
}

async function main() {
  const env = await createBenchEnvironment();
  const pool = createPool(env.databaseUrl, env.logger, 2);
  const api = startApiProcess(
    env,
    undefined,
    values.profile
      ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(values.profile)}`]
      : [],
  );
  try {
    await pool.query(
      `INSERT INTO app_user (email, name, password_hash, role)
       VALUES ('reader@example.com', 'Reader', $1, 'viewer')`,
      [await hashPassword(PASSWORD)],
    );
    await pool.query(
      `INSERT INTO worker (name, command) VALUES ('w', 'sample-worker')`,
    );
    const seeded = Date.now();
    // Descriptions from a small vocabulary; one in 1,000 says "payroll".
    await pool.query(
      `INSERT INTO scheduler (description, schedule, worker_id, params, status)
       SELECT (ARRAY['Nightly export','Weekly digest','Hourly sync','Daily cleanup'])[1 + n % 4]
              || ' ' || n || CASE WHEN n % 1000 = 0 THEN ' payroll' ELSE '' END,
              '0 ' || (n % 24) || ' * * *', 1,
              jsonb_build_object('region', (ARRAY['north','south','east','west'])[1 + n % 4], 'batch', n),
              n % 10 <> 0
         FROM generate_series(1, $1::int) n`,
      [schedulers],
    );
    await pool.query('ANALYZE scheduler');
    const seedMs = Date.now() - seeded;
    const base = await api.url;
    const login = await fetch(`${base}/auth/login`, {
      method: 'POST',
      headers: {'content-type': 'application/json'},
      body: JSON.stringify({email: 'reader@example.com', password: PASSWORD}),
    });
    const {token} = await login.json();
    const auth = {authorization: `Bearer ${token}`};
    const page = encodeURIComponent('{"limit":20}');
    const kinds = {
      ping: ['ping', `${base}/ping`, {}],
      'by-id': ['scheduler_by_id', `${base}/schedulers/4242`, auth],
      'search-rare': [
        'search_rare_term',
        `${base}/schedulers?q=payroll&filter=${page}`,
        auth,
      ],
      'search-common': [
        'search_common_term',
        `${base}/schedulers?q=north&filter=${page}`,
        auth,
      ],
    };
    const results = {};
    for (const kind of only) {
      const [name, url, headers] = kinds[kind];
      if (warmupSeconds > 0) await measure(url, headers, warmupSeconds);
      const cpuBefore = cpuSeconds(api.child.pid);
      results[name] = await measure(url, headers);
      results[name].api_cpu_us_per_request = cpuPerRequest(
        cpuSeconds(api.child.pid) - cpuBefore,
        results[name].statuses,
      );
    }
    if (results.ping && results.scheduler_by_id) {
      results.by_id_vs_ping = +(
        results.scheduler_by_id.requests_per_s / results.ping.requests_per_s
      ).toFixed(2);
      // The same ratio from the API process's CPU per request: its one
      // thread is what limits both, and CPU time moves less than throughput
      // with what else the machine is doing.
      results.by_id_vs_ping_cpu = +(
        results.ping.api_cpu_us_per_request /
        results.scheduler_by_id.api_cpu_us_per_request
      ).toFixed(2);
    }
    const {rows: plan} = await pool.query(
      `EXPLAIN SELECT * FROM scheduler WHERE search_text LIKE '%payroll%' ORDER BY id LIMIT 20`,
    );
    process.stdout.write(
      `${JSON.stringify(
        {
          machine: `${os.cpus().length} cores (${os.cpus()[0].model.trim()}), node ${process.version}, load ${os.loadavg()[0].toFixed(1)}`,
          client,
          schedulers,
          seed_ms: seedMs,
          seconds,
          warmup_seconds: warmupSeconds,
          connections,
          results,
          search_plan: plan.map(r => r['QUERY PLAN']),
        },
        null,
        2,
      )}\n`,
    );
  } finally {
    const exited = new Promise(resolve => api.child.once('exit', resolve));
    api.child.kill('SIGTERM');
    // A --cpu-prof profile is written as the process exits.
    if (api.child.exitCode === null) await exited;
    await pool.end();
    await env.remove();
  }
}

main().catch(error => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
