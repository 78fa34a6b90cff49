import {existsSync, readFileSync, writeFileSync} from 'node:fs';

const START = '<!-- chaos:full:start -->';
const END = '<!-- chaos:full:end -->';

/** The figures of one run, as chaos-run prints them. */
export interface ChaosReport {
  profile: string;
  seed: number;
  schedulers: number;
  failing_schedulers: number;
  /** Schedulers whose first run prints 1 GB in one line, or without end. */
  flood_schedulers?: number;
  /** The highest resident memory a consumer process reached, MiB. */
  consumer_peak_rss_mb?: number;
  simulated_minutes: number;
  clock_scale: number;
  real_seconds: number;
  restarts: Record<string, number>;
  faults: Record<string, number | string[]>;
  runs: Record<string, number>;
  machine: Record<string, unknown>;
  finished_at: string;
}

function row(name: string, value: unknown, note = ''): string {
  return `| ${name} | ${String(value)} | ${note} |`;
}

/** Markdown for RELIABILITY.md: every figure the issue asks for. */
export function renderChaosReport(report: ChaosReport): string {
  const {faults, runs, machine} = report;
  const cuts = (faults.cut_seconds as string[]) ?? [];
  return [
    `Run on ${report.finished_at.slice(0, 10)}: \`npm run test:chaos -- --full --seed ${report.seed}\` ` +
      `(${report.real_seconds} s real time in all: start, ${report.simulated_minutes} simulated minutes at ${report.clock_scale}x, drain, checks).`,
    '',
    '| Figure | Value | Note |',
    '| --- | ---: | --- |',
    row(
      'Schedulers (`* * * * *`, worker)',
      report.schedulers,
      `${report.failing_schedulers} of them always fail`,
    ),
    row(
      'Flood schedulers',
      report.flood_schedulers ?? 0,
      'first run prints 1 GB in one line / prints without end until its 20 s timeout',
    ),
    row(
      'Consumer peak RSS (MiB)',
      report.consumer_peak_rss_mb ?? 'not measured',
      'sampled every 200 ms across restarts (goal < 300)',
    ),
    row('Simulated minutes', report.simulated_minutes),
    row(
      'Producers / consumers',
      '3 / 2',
      'real processes, restarted 1 s after a kill',
    ),
    row('Producer SIGKILL', faults.producer_sigkill),
    row(
      'Producer SIGKILL between claim and publish',
      faults.producer_sigkill_between_claim_and_publish,
      'test-only fault point',
    ),
    row('Consumer SIGKILL inside a task', faults.consumer_sigkill_mid_task),
    row(
      'Consumer SIGKILL between tasks',
      faults.consumer_sigkill_other,
      'no task running within 2 simulated minutes',
    ),
    row('Broker connection cuts', faults.broker_cut),
    row('Database connection cuts', faults.database_cut),
    row('Broker stalls', faults.broker_stall),
    row('Database stalls', faults.database_stall),
    row(
      'Database cuts of a consumer inside a task (outcome mark)',
      faults.database_cut_during_outcome_mark ?? 0,
    ),
    row(
      'Channel-level closes (406) of every consumer channel',
      faults.consumer_channel_close ?? 0,
    ),
    row('Runs due', runs.due),
    row('Runs claimed', runs.claimed),
    row('Succeeded', runs.succeeded),
    row('Failed (after 3 retries)', runs.failed),
    row('Not terminal', runs.not_terminal, 'must be 0'),
    row('**Lost**', runs.lost, 'must be 0'),
    row('**Duplicate claims**', runs.duplicate_claims, 'must be 0'),
    row(
      'Runs started more often than needed',
      runs.redelivered,
      'redelivered after a kill or cut',
    ),
    row('Side-effect records', runs.side_effect_records),
    row(
      'Runs whose side effect repeated, a fault overlapping',
      runs.repeated_side_effects_after_a_fault,
      'allowed (at-least-once)',
    ),
    row(
      'Runs whose side effect repeated without a fault',
      runs.repeated_side_effects_unexplained,
      'must be 0',
    ),
    '',
    `Cuts and stalls (kind:target:seconds): ${cuts.join(', ') || 'none'}.`,
    `Restarts after kills: ${Object.entries(report.restarts)
      .map(([name, n]) => `${name} ${n}`)
      .join(', ')}.`,
    '',
    `Machine: ${String(machine.cpus)} cores (${String(machine.cpu_model)}), ${String(machine.memory_gib)} GiB, Node ${String(machine.node)}, ` +
      `PostgreSQL and RabbitMQ on the same host, shared with other work (load average at the end: ${(machine.load_average_at_end as string[]).join(', ')}).`,
  ].join('\n');
}

/** Replaces the full-profile block of RELIABILITY.md (between its markers). */
export function writeReliability(file: string, report: ChaosReport): void {
  const text = existsSync(file) ? readFileSync(file, 'utf8') : '';
  const start = text.indexOf(START);
  const end = text.indexOf(END);
  if (start < 0 || end < start) {
    throw new Error(`${file} has no ${START} ... ${END} block`);
  }
  writeFileSync(
    file,
    text.slice(0, start + START.length) +
      '\n\n' +
      renderChaosReport(report) +
      '\n\n' +
      text.slice(end),
  );
}
