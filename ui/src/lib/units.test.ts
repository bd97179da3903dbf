import { describe, expect, it } from 'vitest';
import { duration, latencyScale, scaled } from './units';

describe('latency units', () => {
  it('shows µs under 1 ms and ms above', () => {
    expect(duration(7)).toBe('7 µs');
    expect(duration(999)).toBe('999 µs');
    expect(duration(1_000)).toBe('1.00 ms');
    expect(duration(2_345)).toBe('2.35 ms');
    expect(duration(123_456)).toBe('123 ms');
    expect(duration(null)).toBe('–');
    expect(duration(undefined)).toBe('–');
  });
  it('draws a chart in µs when every value is under 1 ms', () => {
    expect(latencyScale([3, 8, null, 950])).toEqual({ unit: 'µs', divisor: 1 });
    expect(latencyScale([3, 1_500, null])).toEqual({ unit: 'ms', divisor: 1_000 });
    expect(latencyScale([null, null])).toEqual({ unit: 'µs', divisor: 1 });
  });
  it('keeps an interval without requests a gap, not a zero', () => {
    expect(scaled(null, 1_000)).toBeNull();
    expect(scaled(0, 1_000)).toBe(0);
    expect(scaled(2_500, 1_000)).toBe(2.5);
  });
});
