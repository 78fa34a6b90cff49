import {securityId, UserProfile} from '@loopback/security';
import type {User} from '../models';
import type {Role} from '../models/user-role';

/** What the rest of the request knows about the caller. */
export interface CurrentUser extends UserProfile {
  id: number;
  email: string;
  role: Role;
  group_id?: number | null;
  /** The presented token's id and expiry (for signing it out). */
  tokenId?: string;
  tokenExpiresAt?: Date;
}

export function toCurrentUser(user: User): CurrentUser {
  return {
    [securityId]: String(user.id),
    id: user.id!,
    email: user.email,
    name: user.name,
    role: user.role,
    group_id: user.group_id ?? null,
  };
}
