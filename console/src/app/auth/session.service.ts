import {Injectable, inject, signal} from '@angular/core';
import {Router} from '@angular/router';
import {AuthService} from '@client/services/auth.service';
import {firstValueFrom} from 'rxjs';
import {inBackground} from '../shared/in-background';

export type Role = 'admin' | 'operator' | 'viewer';

export interface SignedInUser {
  id: number;
  email: string;
  name: string | null;
  role: Role;
}

interface StoredSession {
  token: string;
  expiresAt: string;
}

const STORAGE_KEY = 'task-scheduler.session';

/**
 * The bearer token lives in memory and in session storage (one tab, gone
 * when the tab closes); the user and role are read from the API, never
 * decoded from the token. Expiry, a 401 or signing out ends the session and
 * returns to the sign-in view with a message.
 */
@Injectable({providedIn: 'root'})
export class SessionService {
  private readonly auth = inject(AuthService);
  private readonly router = inject(Router);
  private stored: StoredSession | null = readStored();
  private expiryTimer: ReturnType<typeof setTimeout> | undefined;
  private loadingUser: Promise<SignedInUser | null> | undefined;

  readonly user = signal<SignedInUser | null>(null);
  /** Why the user is on the sign-in view (expired, signed out). */
  readonly notice = signal<string | null>(null);

  constructor() {
    if (this.stored) this.scheduleExpiry(this.stored.expiresAt);
  }

  token(): string | null {
    return this.stored?.token ?? null;
  }

  canWrite(): boolean {
    const role = this.user()?.role;
    return role === 'admin' || role === 'operator';
  }

  /** Rejects with the API's error (a wrong password is a 401). */
  async signIn(email: string, password: string): Promise<SignedInUser> {
    const answer = await firstValueFrom(
      this.auth.login({body: {email, password}}),
    );
    this.store({token: answer.token, expiresAt: answer.expires_at});
    this.notice.set(null);
    this.loadingUser = undefined;
    const user = await this.loadUser();
    if (!user) throw new Error('Signed in, but your account could not be read');
    return user;
  }

  /** The signed-in user, asked of the API once per page load. */
  async currentUser(): Promise<SignedInUser | null> {
    if (!this.stored) return null;
    if (this.user()) return this.user();
    return this.loadUser();
  }

  private loadUser(): Promise<SignedInUser | null> {
    this.loadingUser ??= firstValueFrom(this.auth.me())
      .then(me => {
        const user: SignedInUser = {...me, name: me.name ?? null};
        this.user.set(user);
        return user;
      })
      .catch(() => null);
    return this.loadingUser;
  }

  signOut(): void {
    // Revoke the token server-side too; the local session ends either way.
    if (this.stored) this.auth.logout().subscribe({error: () => undefined});
    this.end('You are signed out.');
  }

  /** A 401 from any call, or the token's own expiry. */
  expire(message = 'Your session has expired: sign in again.'): void {
    if (!this.stored && !this.user()) return;
    this.end(message, true);
  }

  private end(message: string, keepPlace = false): void {
    this.stored = null;
    this.loadingUser = undefined;
    sessionStorage.removeItem(STORAGE_KEY);
    clearTimeout(this.expiryTimer);
    this.user.set(null);
    this.notice.set(message);
    // An expiry keeps the user's place; signing out starts afresh.
    const here = this.router.url;
    const next =
      keepPlace && !here.startsWith('/sign-in') ? {next: here} : undefined;
    inBackground(this.router.navigate(['/sign-in'], {queryParams: next}));
  }

  private store(session: StoredSession): void {
    this.stored = session;
    sessionStorage.setItem(STORAGE_KEY, JSON.stringify(session));
    this.scheduleExpiry(session.expiresAt);
  }

  private scheduleExpiry(expiresAt: string): void {
    clearTimeout(this.expiryTimer);
    const left = Date.parse(expiresAt) - Date.now();
    // setTimeout overflows past 24.8 days; tokens live far shorter.
    this.expiryTimer = setTimeout(
      () => this.expire(),
      Math.max(0, Math.min(left, 2 ** 31 - 1)),
    );
  }
}

function readStored(): StoredSession | null {
  try {
    const value: unknown = JSON.parse(
      sessionStorage.getItem(STORAGE_KEY) ?? 'null',
    );
    if (
      value &&
      typeof value === 'object' &&
      typeof (value as StoredSession).token === 'string' &&
      typeof (value as StoredSession).expiresAt === 'string' &&
      Date.parse((value as StoredSession).expiresAt) > Date.now()
    ) {
      return value as StoredSession;
    }
  } catch {
    // A damaged entry is the same as none.
  }
  sessionStorage.removeItem(STORAGE_KEY);
  return null;
}
