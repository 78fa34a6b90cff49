import path from 'node:path';
import {isValidTimeZone} from '../scheduling/wall-clock';

/*
 * The value parsers that config/index.ts reads environment variables with: each
 * takes the raw string and the variable's name, and throws a ConfigError
 * that names the variable.
 */

/** Raised for an unusable environment variable; `variable` names it. */
export class ConfigError extends Error {
  override name = 'ConfigError';
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable} ${message}`);
  }
}

export type Env = Record<string, string | undefined>;
export type Parser<T> = (raw: string, name: string) => T;

export function oneOf<T extends string>(allowed: readonly T[]): Parser<T> {
  return (raw, name) => {
    if ((allowed as readonly string[]).includes(raw)) return raw as T;
    throw new ConfigError(
      name,
      `must be one of ${allowed.join(', ')} (got "${raw}")`,
    );
  };
}

export function integer(
  min: number,
  max = Number.MAX_SAFE_INTEGER,
): Parser<number> {
  return (raw, name) => {
    const value = Number(raw);
    if (!/^-?\d+$/.test(raw.trim()) || value < min || value > max) {
      throw new ConfigError(
        name,
        `must be an integer between ${min} and ${max} (got "${raw}")`,
      );
    }
    return value;
  };
}

export function numberAtLeast(min: number): Parser<number> {
  return (raw, name) => {
    const value = Number(raw);
    if (raw.trim() === '' || !Number.isFinite(value) || value < min) {
      throw new ConfigError(name, `must be a number >= ${min} (got "${raw}")`);
    }
    return value;
  };
}

export function boolean(raw: string, name: string): boolean {
  const value = raw.trim().toLowerCase();
  if (value === 'true' || value === '1') return true;
  if (value === 'false' || value === '0') return false;
  throw new ConfigError(name, `must be true or false (got "${raw}")`);
}

export function nonEmpty(raw: string, name: string): string {
  if (raw.trim() === '') throw new ConfigError(name, 'must not be empty');
  return raw;
}

/** A git commit id, abbreviated or whole (the build_info metric's label). */
export function commitId(raw: string, name: string): string {
  if (/^[0-9a-f]{7,40}$/.test(raw)) return raw;
  throw new ConfigError(
    name,
    'must be a git commit id: 7 to 40 lowercase hexadecimal characters',
  );
}

/** URLs may carry passwords, so the bad value is never echoed. */
export function url(protocols: string[]): Parser<string> {
  return (raw, name) => {
    let parsed: URL;
    try {
      parsed = new URL(raw);
    } catch {
      throw new ConfigError(name, 'is not a valid URL');
    }
    if (!protocols.includes(parsed.protocol) || parsed.hostname === '') {
      throw new ConfigError(
        name,
        `must be a URL of the form ${protocols[0]}//host[:port]/...`,
      );
    }
    return raw;
  };
}

export function basePath(raw: string, name: string): string {
  if (!/^(\/[A-Za-z0-9._~-]+)+$/.test(raw)) {
    throw new ConfigError(
      name,
      `must be a path such as /api, without a trailing slash (got "${raw}")`,
    );
  }
  return raw;
}

export function bodyLimit(raw: string, name: string): string {
  if (!/^\d+(b|kb|mb)$/i.test(raw)) {
    throw new ConfigError(
      name,
      `must be a size such as 1mb, 512kb or 2048b (got "${raw}")`,
    );
  }
  return raw.toLowerCase();
}

/** `3600`, `90s`, `30m`, `1h` or `7d`, in seconds. */
export function duration(raw: string, name: string): number {
  const match = /^(\d+)(s|m|h|d)?$/.exec(raw.trim());
  const unit = {s: 1, m: 60, h: 3600, d: 86400}[match?.[2] ?? 's'] ?? 1;
  const seconds = match ? Number(match[1]) * unit : 0;
  if (seconds < 1) {
    throw new ConfigError(
      name,
      `must be a duration such as 3600, 15m, 1h or 7d (got "${raw}")`,
    );
  }
  return seconds;
}

/** A number in [min, max]; fractions allowed. */
export function numberBetween(min: number, max: number): Parser<number> {
  return (raw, name) => {
    const value = Number(raw);
    if (
      raw.trim() === '' ||
      !Number.isFinite(value) ||
      value < min ||
      value > max
    ) {
      throw new ConfigError(
        name,
        `must be a number between ${min} and ${max} (got "${raw}")`,
      );
    }
    return value;
  };
}

export function isoInstant(raw: string, name: string): Date {
  const value = new Date(raw);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(raw) || Number.isNaN(value.getTime())) {
    throw new ConfigError(
      name,
      `must be an ISO 8601 instant such as 2026-11-21T20:00:00.000Z (got "${raw}")`,
    );
  }
  return value;
}

export function absolutePath(raw: string, name: string): string {
  if (!path.isAbsolute(raw)) {
    throw new ConfigError(name, `must be an absolute path (got "${raw}")`);
  }
  return raw;
}

export function email(raw: string, name: string): string {
  if (!/^[^\s@]+@[^\s@]+$/.test(raw)) {
    throw new ConfigError(name, `must be an e-mail address (got "${raw}")`);
  }
  return raw.toLowerCase();
}

export function timeZone(raw: string, name: string): string {
  if (!isValidTimeZone(raw)) {
    throw new ConfigError(
      name,
      `must be an IANA time zone such as UTC or Europe/Berlin (got "${raw}")`,
    );
  }
  return raw;
}

export function mailAddress(raw: string, name: string): string {
  if (!/^[^\s@<>]+@[^\s@<>]+$/.test(raw.trim())) {
    throw new ConfigError(name, `must be an e-mail address (got "${raw}")`);
  }
  return raw.trim();
}

export function read<T>(
  env: Env,
  name: string,
  fallback: T,
  parse: Parser<T>,
): T {
  const raw = env[name];
  return raw === undefined ? fallback : parse(raw, name);
}

/** Optional variables: empty counts as unset (compose files pass `VAR=`). */
export function readOptional<T>(
  env: Env,
  name: string,
  parse: Parser<T>,
): T | undefined {
  const raw = env[name];
  return raw === undefined || raw === '' ? undefined : parse(raw, name);
}
