import { describe, expect, it } from 'vitest';
import { claims, portals } from './jwt';

const enc = (o: object) =>
  btoa(JSON.stringify(o)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');

describe('jwt', () => {
  it('reads claims of a compact JWT, utf-8 included', () => {
    const t = `${enc({ alg: 'ES256' })}.${enc({ username: 'ana', scope: 'a b' })}.sig`;
    expect(claims(t)).toEqual({ username: 'ana', scope: 'a b' });
    expect(claims('garbage')).toEqual({});
  });
  it('maps scopes to portals', () => {
    expect(portals('apim:subscribe')).toEqual(['devportal']);
    expect(portals('apim:api_view apim:subscribe apim:admin')).toEqual([
      'publisher',
      'devportal',
      'admin',
    ]);
    expect(portals(undefined)).toEqual([]);
  });
});
