import type {AppMode} from '../config';

/** Whether a process started in `mode` plays `role`; `all` plays every role. */
export function runsRole(
  mode: AppMode,
  role: Exclude<AppMode, 'all'>,
): boolean {
  return mode === 'all' || mode === role;
}
