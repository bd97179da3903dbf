import { describe, expect, it } from 'vitest';
import { match } from './router';

describe('match', () => {
  it('reads params and refuses other shapes', () => {
    expect(match('/publisher/apis/:id', '/publisher/apis/a%2Fb')).toEqual({ id: 'a/b' });
    expect(match('/publisher/apis/:id', '/publisher/apis')).toBeNull();
    expect(match('/admin', '/admin/')).toEqual({});
    expect(match('/admin/users', '/admin/tiers')).toBeNull();
  });
});
