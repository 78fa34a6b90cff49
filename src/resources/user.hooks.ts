import type {AnyObject, DataObject} from '@loopback/repository';
import {hashPassword} from '../auth/password-hasher';
import {MIN_PASSWORD_LENGTH} from '../config';
import type {BodyExtra, CrudHooks} from '../crud/crud-resource';
import type {User} from '../models';
import {unprocessable} from './hook-helpers';

/** The plain password a body may carry; only its scrypt hash is stored. */
export const PASSWORD_FIELD: Record<string, BodyExtra> = {
  password: {
    schema: {type: 'string', minLength: MIN_PASSWORD_LENGTH, maxLength: 1000},
  },
};

async function toRow(body: AnyObject): Promise<DataObject<User>> {
  const {password, ...fields} = body;
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
    return toRow(patch);
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
