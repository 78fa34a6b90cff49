import {createHash, randomBytes} from 'node:crypto';
import {ROLES, type Role} from '../models/user-role';

export const API_KEY_PREFIX = 'tsk_';
/** `tsk_` and 32 random bytes in base64url (43 characters). */
export const API_KEY_PATTERN = /^tsk_[A-Za-z0-9_-]{43}$/;
/** The longest life of a key. */
export const MAX_API_KEY_DAYS = 366;
/** last_used_at is written at most this often per key. */
export const LAST_USED_INTERVAL_MS = 60_000;

export function newApiKey(): string {
  return API_KEY_PREFIX + randomBytes(32).toString('base64url');
}

/** SHA-256 is enough: the key holds 256 random bits, nothing to guess. */
export function apiKeyHash(key: string): Buffer {
  return createHash('sha256').update(key).digest();
}

/** The lower of two roles (admin > operator > viewer). */
export function lowerRole(a: Role, b: Role): Role {
  return ROLES.indexOf(a) >= ROLES.indexOf(b) ? a : b;
}

/** True when `role` is no higher than `ceiling`. */
export function roleAtMost(role: Role, ceiling: Role): boolean {
  return ROLES.indexOf(role) >= ROLES.indexOf(ceiling);
}
