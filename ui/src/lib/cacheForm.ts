// The Publisher's Cache tab as data: the API's `cacheConfiguration` (the file's `cache`
// policy as written, docs/caching.md) to the form's fields and back, and a resource's
// own setting (the API's, off, or its own settings).
import type { CachePurge } from '../api/calls';
import { quantity } from './units';

/** The API's `cacheConfiguration`, the file's `cache` policy as written. */
export interface CacheConfig {
  [key: string]: unknown;
  ttl?: number | string;
  methods?: string[];
  statuses?: number[];
  key?: { query?: boolean; headers?: string[]; consumer?: boolean };
  max_entry_size?: number | string;
  max_size?: number | string;
  stale_while_revalidate?: number | string;
  stale_if_error?: number | string;
  lock_timeout?: number | string;
  /** Store a key's answer only from its Nth request (1 when omitted). */
  min_uses?: number;
  /** `always`: every miss stores; `adaptive` (when omitted): while a burst earns almost
   * no hits, only a key asked before (docs/caching.md, "Admission"). */
  admission?: 'adaptive' | 'always';
  tag_header?: string;
  /** `redis`: a second level shared by the cluster's gateways (their `--redis`). */
  shared?: 'none' | 'redis';
  purges?: CachePurge[];
}

/** A resource's `cacheConfiguration`: off, the API's settings, or its own over them. */
export type ResourceCache = boolean | CacheConfig | undefined;

/** The form's fields, as typed. */
export interface Form {
  enabled: boolean;
  ttl: string;
  methods: string[];
  statuses: string;
  query: boolean;
  headers: string;
  consumer: boolean;
  maxSize: string;
  maxEntry: string;
  swr: string;
  sie: string;
  tagHeader: string;
  /** Store from the Nth request (`min_uses`); empty: every miss stores. */
  minUses: string;
  /** `admission: always`: every miss stores, whatever the hits. */
  storeEveryMiss: boolean;
  shared: boolean;
}

const list = (s: string) => s.split(',').map((x) => x.trim()).filter(Boolean);

export const text = (v: number | string | undefined) => (v === undefined ? '' : String(v));

export const formOf = (c: CacheConfig | null | undefined): Form => ({
  enabled: !!c,
  ttl: text(c?.ttl),
  methods: c?.methods ?? ['GET'],
  statuses: (c?.statuses ?? []).join(', '),
  query: c?.key?.query ?? true,
  headers: (c?.key?.headers ?? []).join(', '),
  consumer: c?.key?.consumer ?? true,
  maxSize: text(c?.max_size),
  maxEntry: text(c?.max_entry_size),
  swr: text(c?.stale_while_revalidate),
  sie: text(c?.stale_if_error),
  tagHeader: c?.tag_header ?? '',
  minUses: text(c?.min_uses),
  storeEveryMiss: c?.admission === 'always',
  shared: c?.shared === 'redis',
});

/** The configuration to send: `null` (no cache) or the fields given, the stored purges
 * and lock timeout kept (the form does not show them). Statuses and a min uses that are
 * not numbers are sent as typed, so the control plane names the field. */
export function configOf(f: Form, start: CacheConfig | null | undefined): CacheConfig | null {
  if (!f.enabled) return null;
  const c: CacheConfig = { methods: f.methods };
  const set = (k: keyof CacheConfig, v: number | string | undefined) => {
    if (v !== undefined) (c as Record<string, unknown>)[k] = v;
  };
  set('ttl', quantity(f.ttl));
  set('max_size', quantity(f.maxSize));
  set('max_entry_size', quantity(f.maxEntry));
  set('stale_while_revalidate', quantity(f.swr));
  set('stale_if_error', quantity(f.sie));
  set('lock_timeout', start?.lock_timeout);
  const statuses = list(f.statuses).map((s) => (/^\d+$/.test(s) ? Number(s) : (s as unknown as number)));
  if (statuses.length) c.statuses = statuses;
  c.key = { query: f.query, headers: list(f.headers), consumer: f.consumer };
  if (f.tagHeader.trim()) c.tag_header = f.tagHeader.trim();
  const minUses = f.minUses.trim();
  if (minUses) c.min_uses = /^\d+$/.test(minUses) ? Number(minUses) : (minUses as unknown as number);
  if (f.storeEveryMiss) c.admission = 'always';
  if (f.shared) c.shared = 'redis';
  if (start?.purges?.length) c.purges = start.purges;
  return c;
}

/** Which of the three a resource's setting is. */
export const modeOf = (c: ResourceCache): 'api' | 'off' | 'own' =>
  c === undefined || c === true ? 'api' : c === false ? 'off' : 'own';
