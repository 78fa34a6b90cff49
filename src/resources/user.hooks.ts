import type {AnyObject, DataObject} from '@loopback/repository';
import {hashPassword} from '../auth/password-hasher';
import {MIN_PASSWORD_LENGTH} from '../config';
import type {BodyExtra, CrudHooks} from '../crud/crud-resource';
import type {User} from '../models';
import {passwordProblem} from '../auth/password-policy';
import {unprocessable} from './hook-helpers';

/** The plain password a body may carry; only its scrypt hash is stored. */
export const PASSWORD_FIELD: Record<string, BodyExtra> = {
  password: {
    schema: {type: 'string', minLength: MIN_PASSWORD_LENGTH, maxLength: 1000},
  },
};

/** 422 naming the rule a new password breaks. */
function assertPasswordAllowed(password: unknown, email: unknown): void {
  if (typeof password !== 'string') return;
  const problem = passwordProblem(
    password,
    typeof email === 'string' ? email : undefined,
  );
  if (problem) {
    throw unprocessable({
      path: '/password',
      code: problem.code,
      message: `password ${problem.message}`,
    });
  }
}

async function toRow(
  body: AnyObject,
  currentEmail?: string,
): Promise<DataObject<User>> {
  const {password, ...fields} = body;
  assertPasswordAllowed(password, fields.email ?? currentEmail);
  return {
    ...fields,
    ...(typeof fields.email === 'string'
      ? {email: fields.email.toLowerCase()}
      : {}),
    ...(typeof password === 'string'
      ? {password_hash: await hashPassword(password)}
      : {}),
  };
}

export const userHooks: CrudHooks<User> = {
  beforeCreate: body => toRow(body),

  /** An admin cannot lock themselves out by mistake. */
  async beforeUpdate(patch, current, ctx) {
    const demotes = patch.role !== undefined && patch.role !== 'admin';
    if (current.id === ctx.user.id && (demotes || patch.active === false)) {
      throw unprocessable({
        path: patch.active === false ? '/active' : '/role',
        code: 'selfLockout',
        message: 'You cannot demote or deactivate your own account',
      });
    }
    return toRow(patch, current.email);
  },

  async beforeDelete(current, ctx) {
    if (current.id === ctx.user.id) {
      throw unprocessable({
        path: '/id',
        code: 'selfLockout',
        message: 'You cannot delete your own account',
      });
    }
  },
};
