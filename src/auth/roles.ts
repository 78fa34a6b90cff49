/** Who may do what: viewers read, operators also run the day-to-day, admins all. */
export const ROLES = ['admin', 'operator', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

export const EVERYONE: Role[] = ['admin', 'operator', 'viewer'];
export const OPERATORS: Role[] = ['admin', 'operator'];
export const ADMINS: Role[] = ['admin'];
