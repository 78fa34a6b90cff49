/**
 * The roles a user can hold, a fact of the user model: the access rules in
 * `auth/roles.ts` and the API keys build on it, and the models need no `auth/`.
 */
export const ROLES = ['admin', 'operator', 'viewer'] as const;
export type Role = (typeof ROLES)[number];
