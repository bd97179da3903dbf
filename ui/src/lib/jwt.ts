// Reads (never verifies: the server does) the claims of a JWT the key manager issued,
// to decide which portals and actions the signed-in user sees.

export interface Claims {
  sub?: string;
  username?: string;
  scope?: string;
  exp?: number;
}

export function claims(jwt: string): Claims {
  const part = jwt.split('.')[1];
  if (!part) return {};
  try {
    const b64 = part.replace(/-/g, '+').replace(/_/g, '/');
    const json = decodeURIComponent(
      Array.from(atob(b64), (c) => '%' + c.charCodeAt(0).toString(16).padStart(2, '0')).join(''),
    );
    return JSON.parse(json) as Claims;
  } catch {
    return {};
  }
}

export type Portal = 'publisher' | 'devportal' | 'admin';

/** Which portals a token's scopes open. */
export function portals(scope: string | undefined): Portal[] {
  const s = new Set((scope ?? '').split(' '));
  const out: Portal[] = [];
  if (s.has('apim:api_view') || s.has('apim:api_create')) out.push('publisher');
  if (s.has('apim:subscribe')) out.push('devportal');
  if (s.has('apim:admin')) out.push('admin');
  return out;
}
