import {MIN_PASSWORD_LENGTH} from '../config';

/**
 * Passwords of 12 characters or more that lists of breached passwords rank
 * most common (SecLists' top 10,000, the long ones), plus what the length
 * rule pushes people to: a short common password repeated or padded with
 * digits. Compared case-insensitively.
 */
const COMMON = new Set(
  [
    '123456789012',
    '1234567890123',
    '12345678901234',
    '123456123456',
    '111111111111',
    '000000000000',
    '123123123123',
    'qwertyuiopas',
    'qwertyuiop123',
    'qwerty123456',
    '1q2w3e4r5t6y',
    '1qaz2wsx3edc',
    'zaq12wsxcde3',
    'asdfghjkl123',
    'password1234',
    'password12345',
    'password123456',
    'passwordpassword',
    'password1!',
    'p@ssw0rd1234',
    'iloveyou1234',
    'welcome12345',
    'welcome123456',
    'letmein12345',
    'changeme1234',
    'administrator',
    'administrator1',
    'admin1234567',
    'adminadmin123',
    'football1234',
    'baseball1234',
    'superman1234',
    'trustno11234',
    'monkey123456',
    'dragon123456',
    'sunshine1234',
    'princess1234',
    'abc123abc123',
    'abcdefghijkl',
    'abcdefghijklm',
    'qwertyqwerty',
    'aaaaaaaaaaaa',
    'correcthorsebatterystaple',
  ].map(p => p.toLowerCase()),
);

export interface PasswordProblem {
  code: 'passwordLength' | 'passwordCommon';
  message: string;
}

/** Why `password` is refused, or undefined when it is acceptable. */
export function passwordProblem(
  password: string,
  email?: string,
): PasswordProblem | undefined {
  if ([...password].length < MIN_PASSWORD_LENGTH) {
    return {
      code: 'passwordLength',
      message: `must be at least ${MIN_PASSWORD_LENGTH} characters long`,
    };
  }
  const lower = password.toLowerCase();
  const local = email?.split('@')[0]?.toLowerCase();
  if (
    COMMON.has(lower) ||
    /^(.)\1+$/.test(lower) ||
    (local !== undefined && local.length >= 4 && lower.includes(local))
  ) {
    return {
      code: 'passwordCommon',
      message:
        'is too common or too easy to guess (a well-known password, one repeated character, or the e-mail name)',
    };
  }
  return undefined;
}
