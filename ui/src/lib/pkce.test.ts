import { describe, expect, it } from 'vitest';
import { randomVerifier, s256 } from './pkce';

describe('pkce', () => {
  it('matches RFC 7636 Appendix B', async () => {
    expect(await s256('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk')).toBe(
      'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    );
  });
  it('makes 43-character unreserved verifiers, different each time', () => {
    const a = randomVerifier();
    expect(a).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(randomVerifier()).not.toBe(a);
  });
});
