// Latency as the dashboards show it: microseconds under 1 ms (a gateway's own time is
// often a few µs, which "0.00 ms" hid), milliseconds above. The analytics API reports
// every latency in µs; `null` is an interval without requests (a gap, not a zero).

/** One latency, in the unit that fits it. */
export function duration(us: number | null | undefined): string {
  if (us === null || us === undefined) return '–';
  if (us < 1_000) return `${Math.round(us)} µs`;
  return `${(us / 1_000).toFixed(us < 10_000 ? 2 : 0)} ms`;
}

/** The unit a chart of these latencies is drawn in: µs when all are under 1 ms. */
export function latencyScale(values: (number | null | undefined)[]): { unit: 'µs' | 'ms'; divisor: number } {
  const max = Math.max(0, ...values.filter((v): v is number => typeof v === 'number'));
  return max < 1_000 ? { unit: 'µs', divisor: 1 } : { unit: 'ms', divisor: 1_000 };
}

/** A latency in the chart's unit; an interval without requests stays `null` (a gap). */
export function scaled(us: number | null | undefined, divisor: number): number | null {
  return us === null || us === undefined ? null : us / divisor;
}

/** A size or a duration as typed in a form: digits are a number (bytes, milliseconds),
 * text (`256KiB`, `2s`) stays text for the control plane to read; empty is absent. */
export function quantity(s: string): number | string | undefined {
  const t = s.trim();
  if (!t) return undefined;
  return /^\d+$/.test(t) ? Number(t) : t;
}
