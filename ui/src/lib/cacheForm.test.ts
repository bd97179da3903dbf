import { describe, expect, it } from 'vitest';
import { configOf, formOf, modeOf } from './cacheForm';

describe('the Cache tab form', () => {
  it('sends back what it was given, purges and lock timeout kept', () => {
    const stored = {
      ttl: '60s',
      methods: ['GET'],
      statuses: [200, 404],
      key: { query: false, headers: ['accept'], consumer: true },
      max_size: '8MiB',
      stale_if_error: '5m',
      lock_timeout: '2s',
      min_uses: 2,
      admission: 'always' as const,
      tag_header: 'Cache-Tag',
      shared: 'redis' as const,
      purges: [{ id: 7, tag: 't1' }],
    };
    expect(configOf(formOf(stored), stored)).toEqual(stored);
    // Switched off, the shared level is left out (the default: this gateway's memory).
    const local = configOf({ ...formOf(stored), shared: false }, stored)!;
    expect(local.shared).toBeUndefined();
  });

  it('sends null when switched off and numbers as numbers', () => {
    const f = formOf(null);
    expect(f.enabled).toBe(false);
    expect(configOf(f, null)).toBeNull();
    const on = { ...f, enabled: true, ttl: '30', statuses: '200, 2xx' };
    const c = configOf(on, null)!;
    expect(c.ttl).toBe(30);
    expect(c.statuses).toEqual([200, '2xx']);
    expect(c.key).toEqual({ query: true, headers: [], consumer: true });
    expect(c.min_uses).toBeUndefined();
    // Adaptive admission is the default: left out unless every miss must store.
    expect(c.admission).toBeUndefined();
    expect(configOf({ ...on, storeEveryMiss: true }, null)!.admission).toBe('always');
    expect(formOf({ admission: 'adaptive' }).storeEveryMiss).toBe(false);
    expect(configOf({ ...on, minUses: ' 2 ' }, null)!.min_uses).toBe(2);
    expect(configOf({ ...on, minUses: 'twice' }, null)!.min_uses).toBe('twice');
  });

  it("reads a resource's setting", () => {
    expect([undefined, true, false, { ttl: '5s' }].map(modeOf)).toEqual(['api', 'api', 'off', 'own']);
  });
});
