import {expect} from '@loopback/testlab';
import {
  intlWallTimeAt,
  wallMinute,
  wallTimeAt,
} from '../../scheduling/wall-clock';

const MINUTE_MS = 60_000;
const DAY_MS = 24 * 60 * MINUTE_MS;

/** Wall minus UTC in minutes, as Intl alone says. */
function intlOffset(time: number, zone: string): number {
  return wallMinute(intlWallTimeAt(new Date(time), zone)) - time / MINUTE_MS;
}

/** The first minute of each offset change between `from` and `to`, by Intl. */
function offsetChanges(zone: string, from: number, to: number): number[] {
  const changes: number[] = [];
  for (let day = from; day < to; day += DAY_MS) {
    if (intlOffset(day, zone) === intlOffset(day + DAY_MS, zone)) continue;
    let low = day;
    let high = day + DAY_MS;
    while (high - low > MINUTE_MS) {
      const middle = low + Math.floor((high - low) / MINUTE_MS / 2) * MINUTE_MS;
      if (intlOffset(middle, zone) === intlOffset(low, zone)) low = middle;
      else high = middle;
    }
    changes.push(high);
  }
  return changes;
}

/** A small deterministic generator: the same instants in every run. */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
}

describe('wall clock (the memo of offsets against Intl)', () => {
  // Whole-hour and half-hour changes, a 30-minute DST shift, a change at a
  // quarter hour, negative DST, changes at local midnight and by Ramadan.
  const zones = [
    'Europe/Berlin',
    'America/New_York',
    'America/St_Johns',
    'Australia/Lord_Howe',
    'Pacific/Chatham',
    'Australia/Adelaide',
    'Europe/Dublin',
    'America/Havana',
    'America/Santiago',
    'Africa/Casablanca',
    'Asia/Gaza',
    'Antarctica/Troll',
    'Pacific/Auckland',
  ];
  for (const zone of zones) {
    it(`reads every minute around each offset change in ${zone} (2024-2031) as Intl does`, () => {
      const changes = offsetChanges(
        zone,
        Date.UTC(2024, 0, 1),
        Date.UTC(2031, 0, 1),
      );
      expect(changes.length).to.be.greaterThan(0);
      const wrong: string[] = [];
      for (const change of changes) {
        for (let m = -150; m <= 150; m++) {
          const at = new Date(change + m * MINUTE_MS);
          const fast = wallTimeAt(at, zone);
          const intl = intlWallTimeAt(at, zone);
          if (JSON.stringify(fast) !== JSON.stringify(intl))
            wrong.push(`${at.toISOString()} ${JSON.stringify(fast)}`);
        }
      }
      expect(wrong).to.deepEqual([]);
    });
  }

  it('agrees with Intl at 20,000 whole minutes in every zone from 1900 to 2100', () => {
    const all = Intl.supportedValuesOf('timeZone');
    const random = seeded(20261127);
    const from = Date.UTC(1900, 0, 1) / MINUTE_MS;
    const to = Date.UTC(2100, 0, 1) / MINUTE_MS;
    const wrong: string[] = [];
    for (let i = 0; i < 20_000; i++) {
      const zone = all[Math.floor(random() * all.length)];
      const at = new Date(
        Math.floor(from + random() * (to - from)) * MINUTE_MS,
      );
      const fast = wallTimeAt(at, zone);
      const intl = intlWallTimeAt(at, zone);
      if (JSON.stringify(fast) !== JSON.stringify(intl))
        wrong.push(`${zone} ${at.toISOString()}`);
    }
    expect(wrong).to.deepEqual([]);
  });

  it('reads an instant inside a minute, and an old local mean time offset with seconds, as Intl does', () => {
    const cases: Array<[string, string]> = [
      ['2026-11-27T16:00:30.500Z', 'Europe/Berlin'],
      ['2027-03-28T00:59:59.999Z', 'Europe/Berlin'],
      // Amsterdam kept +00:19:32 until 1937: Intl floors the wall minute.
      ['1930-06-01T12:00:00Z', 'Europe/Amsterdam'],
      ['1930-06-01T12:00:40Z', 'Europe/Amsterdam'],
      ['1900-01-01T00:00:00Z', 'Asia/Kolkata'],
      ['2026-11-27T16:07:00Z', 'Asia/Kathmandu'],
      // The last instant a Date holds: its next day is none (review).
      ['+275760-09-13T00:00:00.000Z', 'Europe/Berlin'],
      ['-271821-04-20T00:00:00.000Z', 'America/New_York'],
    ];
    for (const [iso, zone] of cases) {
      const at = new Date(iso);
      expect({iso, zone, wall: wallTimeAt(at, zone)}).to.deepEqual({
        iso,
        zone,
        wall: intlWallTimeAt(at, zone),
      });
    }
  });
});
