'use strict';
// Real service processes for the benchmarks that run the roles as operators
// do (`start:scheduler`, `start:worker`), and the CPU they used.
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const {spawn} = require('node:child_process');

const ROOT = path.resolve(__dirname, '../..');

/** CPU seconds (user + system) of a process, from /proc. */
function cpuSeconds(pid) {
  try {
    const fields = fs
      .readFileSync(`/proc/${pid}/stat`, 'utf8')
      .split(') ')[1]
      .split(' ');
    // utime + stime, in clock ticks of 1/100 s (Linux's USER_HZ).
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

/** Processes whose CPU a benchmark reports beside its own: the servers it runs on. */
const SERVER_COMMANDS = {postgres: 'postgresql', 'beam.smp': 'rabbitmq'};

/**
 * A snapshot of the machine's CPU seconds: every PostgreSQL process (server
 * and backends) and RabbitMQ's Erlang VM, and the busy time of all cores;
 * `cpuSince(snapshot)` gives what each used since. A backend that ended in
 * between is lost (its time is not in its parent's until it is reaped), so
 * the servers' figures are lower bounds.
 */
function machineCpu() {
  const servers = {postgresql: 0, rabbitmq: 0};
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const name =
        SERVER_COMMANDS[
          stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))
        ];
      if (name) servers[name] += cpuSeconds(pid);
    } catch {
      // Gone while listed.
    }
  }
  // First line of /proc/stat: user nice system idle iowait irq softirq steal.
  const ticks = fs
    .readFileSync('/proc/stat', 'utf8')
    .split('\n')[0]
    .split(/\s+/)
    .slice(1, 9)
    .map(Number);
  const busy = ticks.reduce((a, b) => a + b, 0) - ticks[3] - ticks[4];
  return {...servers, machine_busy: busy / 100};
}

function cpuSince(before) {
  const now = machineCpu();
  return Object.fromEntries(
    Object.keys(now).map(key => [key, +(now[key] - before[key]).toFixed(2)]),
  );
}

/**
 * The node flags `npm run start:<mode>` passes (package.json's script, between
 * `node` and `dist/index.js`), so a benchmark runs a role as operators do.
 */
function startFlags(mode) {
  const {scripts} = JSON.parse(
    fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'),
  );
  const script = scripts[`start:${mode}`];
  const flags = / node (.*?)\s*dist\/index\.js/.exec(script ?? '');
  if (!flags) throw new Error(`no start:${mode} script running dist/index.js`);
  return flags[1].split(/\s+/).filter(Boolean);
}

/**
 * Starts `dist/index.js` in `mode` (scheduler | worker) with production
 * settings, as `npm run start:<role>` does (with its node flags); `onLine`
 * gets each stdout line. `nodeFlags` come first (`--cpu-prof`).
 */
function startRole(mode, name, env, onLine, nodeFlags = []) {
  const flags = startFlags(mode);
  const child = spawn(
    process.execPath,
    [...nodeFlags, ...flags, path.join(ROOT, 'dist/index.js')],
    {
      env: {
        PATH: process.env.PATH,
        APP_MODE: mode,
        NODE_ENV: 'production',
        LOG_LEVEL: 'info',
        SERVICE_NAME: name,
        PORT: '0',
        CRON_CATCHUP_MINUTES: '5',
        JWT_SECRET: 'bench-fleet-secret-of-at-least-32-characters',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let partial = '';
  child.stdout.on('data', chunk => {
    const lines = (partial + chunk.toString()).split('\n');
    partial = lines.pop();
    for (const line of lines) onLine(line);
  });
  return child;
}

/** Sends SIGTERM to each child still running and waits for all to exit. */
async function stopAll(children) {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
    }
  }
  await Promise.all(
    children.map(child =>
      child.exitCode === null && child.signalCode === null
        ? new Promise(resolve => child.once('exit', resolve))
        : null,
    ),
  );
}

/** A TCP proxy counting the client's request bursts (one per round trip). */
function countingProxy(port) {
  const counter = {bursts: 0};
  const server = net.createServer(client => {
    const upstream = net.connect(port, '127.0.0.1');
    client.on('data', chunk => {
      counter.bursts++;
      upstream.write(chunk);
    });
    upstream.pipe(client);
    const close = () => (client.destroy(), upstream.destroy());
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
  });
  return new Promise(resolve =>
    server.listen(0, '127.0.0.1', () =>
      resolve({counter, port: server.address().port, server}),
    ),
  );
}

module.exports = {
  countingProxy,
  startFlags,
  cpuSeconds,
  cpuSince,
  machineCpu,
  startRole,
  stopAll,
};
