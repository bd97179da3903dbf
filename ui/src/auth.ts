// Sign-in through the control plane's key manager: authorization code with PKCE
// (public client `turnpike-ui`). Tokens stay in memory only; a reload goes back through
// /oauth2/authorize, which answers at once while the key manager's HttpOnly session
// cookie lives. The verifier and state wait in sessionStorage during the redirect.
import { claims, portals, type Claims, type Portal } from './lib/jwt';
import { randomVerifier, s256 } from './lib/pkce';

export const CLIENT_ID = 'turnpike-ui';
const PENDING = 'turnpike.login';
/** Set while this tab has signed in: a reload then goes straight back through
 * /oauth2/authorize instead of showing the public catalogue. */
const SIGNED_IN = 'turnpike.signedIn';

/** This tab signed in before (a reload should sign in again, silently). */
export function signedInBefore(): boolean {
  return sessionStorage.getItem(SIGNED_IN) === '1';
}

interface Tokens {
  access: string;
  refresh?: string;
  expiresAt: number;
  claims: Claims;
}

let tokens: Tokens | null = null;

export interface User {
  name: string;
  portals: Portal[];
  scopes: string[];
}

export function currentUser(): User | null {
  if (!tokens) return null;
  const c = tokens.claims;
  return {
    name: c.username ?? c.sub ?? '',
    portals: portals(c.scope),
    scopes: (c.scope ?? '').split(' ').filter(Boolean),
  };
}

function redirectUri(): string {
  return `${window.location.origin}/callback`;
}

/** Leaves for the login page; comes back to `returnTo` after /callback. */
export async function login(returnTo: string, prompt?: 'login'): Promise<never> {
  const verifier = randomVerifier();
  const state = randomVerifier();
  sessionStorage.setItem(PENDING, JSON.stringify({ verifier, state, returnTo }));
  const q = new URLSearchParams({
    response_type: 'code',
    client_id: CLIENT_ID,
    redirect_uri: redirectUri(),
    code_challenge: await s256(verifier),
    code_challenge_method: 'S256',
    state,
  });
  if (prompt) q.set('prompt', prompt);
  window.location.assign(`/oauth2/authorize?${q}`);
  return new Promise<never>(() => {});
}

async function tokenRequest(form: Record<string, string>): Promise<Tokens> {
  const resp = await fetch('/oauth2/token', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ client_id: CLIENT_ID, ...form }),
  });
  const body = await resp.json();
  if (!resp.ok) throw new Error(body.error_description ?? body.error ?? `HTTP ${resp.status}`);
  return {
    access: body.access_token,
    refresh: body.refresh_token,
    expiresAt: Date.now() + body.expires_in * 1000,
    claims: claims(body.access_token),
  };
}

/** On /callback: checks `state`, exchanges the code; returns where to go next. */
export async function completeLogin(search: string): Promise<string> {
  const q = new URLSearchParams(search);
  const pending = JSON.parse(sessionStorage.getItem(PENDING) ?? 'null');
  sessionStorage.removeItem(PENDING);
  if (q.get('error')) throw new Error(q.get('error_description') ?? q.get('error') ?? 'login failed');
  if (!pending || q.get('state') !== pending.state) throw new Error('login state mismatch: try again');
  tokens = await tokenRequest({
    grant_type: 'authorization_code',
    code: q.get('code') ?? '',
    redirect_uri: redirectUri(),
    code_verifier: pending.verifier,
  });
  sessionStorage.setItem(SIGNED_IN, '1');
  return pending.returnTo || '/';
}

/** A valid access token, refreshed when it is about to expire; null when signed out. */
export async function accessToken(): Promise<string | null> {
  if (!tokens) return null;
  if (tokens.expiresAt - Date.now() < 30_000 && tokens.refresh) {
    try {
      tokens = await tokenRequest({ grant_type: 'refresh_token', refresh_token: tokens.refresh });
    } catch {
      tokens = null;
    }
  }
  return tokens?.access ?? null;
}

export async function logout(): Promise<void> {
  tokens = null;
  sessionStorage.removeItem(SIGNED_IN);
  await fetch('/oauth2/logout', { method: 'POST' });
  window.location.assign('/');
}
