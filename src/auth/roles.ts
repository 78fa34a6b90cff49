import type {Role} from '../models/user-role';

/** Who may do what: viewers read, operators also run the day-to-day, admins all. */
export const EVERYONE: Role[] = ['admin', 'operator', 'viewer'];
export const OPERATORS: Role[] = ['admin', 'operator'];
export const ADMINS: Role[] = ['admin'];
