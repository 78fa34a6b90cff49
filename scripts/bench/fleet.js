#!/usr/bin/env node
// Fleet benchmark: npm run bench:fleet -- [--schedulers 100000] [--due 10000]
//   [--producers 3] [--consumers 4] [--minutes 5]
// Real `start:scheduler` and `start:worker` processes on the benchmark's own
// database and vhost. Every minute it records, per slot: claims, conflicts
// (already_claimed in the producers' tick lines), slots evaluated by a peer,
// time from the minute boundary to the last task start, CPU seconds of each
// process, and the producers' database round trips per tick (request bursts
// counted by a proxy in front of PostgreSQL, one per producer).
'use strict';
const os = require('node:os');
const {parseArgs} = require('node:util');
const {Client} = require('pg');
const {createBenchEnvironment} = require('./bench-environment');
const {countingProxy, cpuSeconds, startRole} = require('./service-processes');

const {values} = parseArgs({
  options: {
    schedulers: {type: 'string', default: '100000'},
    due: {type: 'string', default: '10000'},
    producers: {type: 'string', default: '3'},
    consumers: {type: 'string', default: '4'},
    minutes: {type: 'string', default: '5'},
  },
});
const opts = Object.fromEntries(
  Object.entries(values).map(([k, v]) => [k, Number(v)]),
);
for (const [name, value] of Object.entries(opts)) {
  if (!Number.isInteger(value) || value < 1) {
    process.stderr.write(`--${name} must be a positive integer\n`);
    process.exit(2);
  }
}
if (opts.due > opts.schedulers) {
  process.stderr.write('--due must not exceed --schedulers\n');
  process.exit(2);
}

async function main() {
  const env = await createBenchEnvironment();
  const db = new Client({connectionString: env.databaseUrl});
  await db.connect();
  const procs = [];
  const proxies = [];
  try {
    const {rows: user} = await db.query(
      `INSERT INTO app_user (email, name, password_hash, role)
       VALUES ('bench@example.com', 'bench', 'x', 'viewer') RETURNING id`,
    );
    await db.query(
      `INSERT INTO reminder (message, user_ids) VALUES ('bench', $1::jsonb)`,
      [JSON.stringify([user[0].id])],
    );
    // Due every minute, or never due in a run (00:00 on 1 January).
    await db.query(
      `INSERT INTO scheduler (description, schedule, reminder_id, params)
       SELECT 'fleet ' || n,
              CASE WHEN n <= $2 THEN '* * * * *' ELSE '0 0 1 1 *' END, 1, '{}'
         FROM generate_series(1, $1::int) AS n`,
      [opts.schedulers, opts.due],
    );
    const ticks = [];
    const serverPort = Number(new URL(env.databaseUrl).port || 5432);
    const started = new Set();
    const onLine = name => line => {
      if (line.includes('"Service started"')) started.add(name);
      if (line.includes('"Tick completed"')) {
        ticks.push({producer: name, ...JSON.parse(line)});
      }
    };
    for (let i = 1; i <= opts.producers; i++) {
      const proxy = await countingProxy(serverPort);
      proxies.push(proxy);
      const url = new URL(env.databaseUrl);
      url.host = `127.0.0.1:${proxy.port}`;
      const name = `producer-${i}`;
      procs.push({
        name,
        proxy,
        child: startRole(
          'scheduler',
          name,
          {DATABASE_URL: url.toString(), AMQP_URL: env.amqpUrl},
          onLine(name),
        ),
      });
    }
    for (let i = 1; i <= opts.consumers; i++) {
      const name = `consumer-${i}`;
      procs.push({
        name,
        child: startRole(
          'worker',
          name,
          {DATABASE_URL: env.databaseUrl, AMQP_URL: env.amqpUrl},
          onLine(name),
        ),
      });
    }
    const deadline = Date.now() + 60_000;
    while (started.size < procs.length) {
      if (Date.now() > deadline) throw new Error('the processes did not start');
      await new Promise(r => setTimeout(r, 100));
    }
    // Measure whole minutes: from the next boundary on.
    const first = Math.ceil(Date.now() / 60_000) * 60_000;
    const sample = () =>
      procs.map(p => ({
        name: p.name,
        cpu: cpuSeconds(p.child.pid),
        bursts: p.proxy?.counter.bursts,
      }));
    await new Promise(r => setTimeout(r, first - Date.now() - 50));
    const samples = [sample()];
    for (let m = 1; m <= opts.minutes; m++) {
      await new Promise(r =>
        setTimeout(r, first + m * 60_000 - 50 - Date.now()),
      );
      samples.push(sample());
    }
    // Let the last minute's tasks finish.
    await new Promise(r => setTimeout(r, 20_000));
    const perMinute = [];
    for (let m = 0; m < opts.minutes; m++) {
      const slot = new Date(first + m * 60_000);
      const {rows} = await db.query(
        `SELECT count(*)::int AS claims,
                count(started_at)::int AS started,
                extract(epoch FROM max(started_at) - $1)::float AS last_start_s,
                extract(epoch FROM max(published_at) - $1)::float AS last_publish_s
           FROM scheduler_execution WHERE slot = $1`,
        [slot],
      );
      const slotTicks = ticks.filter(t => {
        const at = Date.parse(t.time);
        return at >= slot.getTime() && at < slot.getTime() + 60_000;
      });
      const cpu = {};
      for (let i = 0; i < procs.length; i++) {
        cpu[procs[i].name] = +(
          samples[m + 1][i].cpu - samples[m][i].cpu
        ).toFixed(2);
      }
      const roundTrips = procs
        .filter(p => p.proxy)
        .map((p, i) => samples[m + 1][i].bursts - samples[m][i].bursts);
      perMinute.push({
        slot: slot.toISOString(),
        claims: rows[0].claims,
        conflicts: slotTicks.reduce((s, t) => s + (t.already_claimed ?? 0), 0),
        slots_evaluated: slotTicks.reduce((s, t) => s + (t.slots ?? 0), 0),
        slots_by_peers: slotTicks.reduce(
          (s, t) => s + (t.slots_by_peers ?? 0),
          0,
        ),
        started: rows[0].started,
        last_publish_s:
          rows[0].last_publish_s === null
            ? null
            : +rows[0].last_publish_s.toFixed(2),
        last_start_s:
          rows[0].last_start_s === null
            ? null
            : +rows[0].last_start_s.toFixed(2),
        producer_cpu_s: +Object.entries(cpu)
          .filter(([n]) => n.startsWith('producer'))
          .reduce((s, [, v]) => s + v, 0)
          .toFixed(2),
        consumer_cpu_s: +Object.entries(cpu)
          .filter(([n]) => n.startsWith('consumer'))
          .reduce((s, [, v]) => s + v, 0)
          .toFixed(2),
        cpu_s: cpu,
        db_round_trips_per_producer: roundTrips,
      });
    }
    const result = {
      benchmark: 'fleet',
      schedulers: opts.schedulers,
      due_per_minute: opts.due,
      producers: opts.producers,
      consumers: opts.consumers,
      minutes: opts.minutes,
      per_minute: perMinute,
      machine: {
        cpus: os.cpus().length,
        model: os.cpus()[0]?.model,
        node: process.version,
        load_average_at_end: os.loadavg().map(l => +l.toFixed(2)),
      },
    };
    process.stdout.write(JSON.stringify(result, null, 2) + '\n');
  } finally {
    for (const p of procs) p.child.kill('SIGTERM');
    await Promise.all(
      procs.map(p =>
        p.child.exitCode === null
          ? new Promise(r => p.child.once('exit', r))
          : null,
      ),
    );
    for (const proxy of proxies) proxy.server.close();
    await db.end();
    await env.remove();
  }
}

main().catch(error => {
  process.stderr.write(`bench:fleet failed: ${error.stack}\n`);
  process.exit(1);
});
