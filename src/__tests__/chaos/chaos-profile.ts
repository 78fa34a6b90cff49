/** How much chaos one run makes: the CI profile and the full one. */
export interface ChaosProfile {
  name: 'short' | 'full';
  /** Schedulers due every minute. */
  schedulers: number;
  /** Every this-many-th scheduler's worker always fails (ends `failed`). */
  failingEvery: number;
  /**
   * Every this-many-th scheduler's worker leaves an orphaned grandchild
   * (`sleep 5 &`) holding its output open, then exits: the run must still
   * end at once, without waiting for the grandchild.
   */
  orphanEvery: number;
  /**
   * Two more schedulers whose first run floods the consumer: one prints a
   * gigabyte in one line, one prints without end until its timeout.
   */
  floodWorkers: boolean;
  simulatedMinutes: number;
  /** Simulated minutes per real minute. */
  clockScale: number;
  faults: {
    producerKills: number;
    producerKillsAfterClaim: number;
    consumerKills: number;
    brokerCuts: number;
    databaseCuts: number;
    /** A consumer's database cut while it runs a task: the outcome mark fails. */
    outcomeMarkCuts: number;
    /** Channel-level closes (406) of every consumer channel. */
    channelCloses: number;
    /** Stalls (black holes, bytes held) of the broker or database link. */
    stalls: number;
  };
  /** Real length of a cut or stall, in ms. */
  cutMs: {min: number; max: number};
  /** How long everything may take to settle after the simulated end. */
  drainTimeoutMs: number;
}

export const PROFILES: Record<ChaosProfile['name'], ChaosProfile> = {
  // CI: a few minutes of the machine, one fault of each kind or more. Cuts are
  // shorter than the 5-20 s to fit the CI budget.
  short: {
    name: 'short',
    schedulers: 100,
    failingEvery: 25,
    orphanEvery: 20,
    floodWorkers: false,
    simulatedMinutes: 8,
    clockScale: 8,
    faults: {
      producerKills: 1,
      producerKillsAfterClaim: 1,
      consumerKills: 2,
      brokerCuts: 1,
      databaseCuts: 1,
      outcomeMarkCuts: 1,
      channelCloses: 1,
      stalls: 1,
    },
    cutMs: {min: 3000, max: 6000},
    drainTimeoutMs: 90_000,
  },
  full: {
    name: 'full',
    schedulers: 1000,
    failingEvery: 100,
    orphanEvery: 250,
    floodWorkers: true,
    simulatedMinutes: 30,
    clockScale: 12,
    faults: {
      producerKills: 3,
      producerKillsAfterClaim: 3,
      consumerKills: 4,
      brokerCuts: 3,
      databaseCuts: 3,
      outcomeMarkCuts: 2,
      channelCloses: 2,
      stalls: 2,
    },
    cutMs: {min: 5000, max: 20_000},
    drainTimeoutMs: 240_000,
  },
};

export interface ChaosOptions {
  profile: ChaosProfile;
  seed: number;
  /** Where to write the figures as JSON (optional). */
  reportFile?: string;
  /** Full profile: on success, put the figures into RELIABILITY.md. */
  writeReliability?: boolean;
}

const USAGE =
  'usage: npm run test:chaos -- [--full [--write]] [--seed <integer>] [--report <file.json>]';

/** `--full`, `--seed N`, `--report file`; unknown flags are refused. */
export function parseChaosArgs(
  argv: string[],
  randomSeed: () => number,
): ChaosOptions {
  let profile = PROFILES.short;
  let seed: number | undefined;
  let reportFile: string | undefined;
  let writeReliability = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--full') profile = PROFILES.full;
    else if (arg === '--short') profile = PROFILES.short;
    else if (arg === '--write') writeReliability = true;
    else if (arg === '--seed') {
      const raw = argv[++i] ?? '';
      if (!/^\d{1,10}$/.test(raw) || Number(raw) > 0xffffffff) {
        throw new Error(`--seed needs an integer 0..4294967295 (${USAGE})`);
      }
      seed = Number(raw);
    } else if (arg === '--report') {
      reportFile = argv[++i];
      if (!reportFile) throw new Error(`--report needs a file (${USAGE})`);
    } else throw new Error(`unknown argument "${arg}" (${USAGE})`);
  }
  return {profile, seed: seed ?? randomSeed(), reportFile, writeReliability};
}
