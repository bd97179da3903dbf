// The JSON shapes the portals read, as the control plane sends them.

export interface Api {
  id: string;
  name: string;
  context: string;
  version: string;
  isDefaultVersion: boolean;
  lifecycleStatus: string;
  type: string;
  description: string;
  /** URLs, or objects with a weight and timeouts (docs/resilience.md). */
  endpoints: Endpoint[];
  /** Where calls with SANDBOX keys go; none: they are refused. */
  sandboxEndpoints?: Endpoint[];
  resources: { path: string; methods: string[]; scopes: string[] }[];
  policies: string[];
  provider: string;
  revision: number;
}

export interface EndpointDetail {
  url: string;
  weight?: number;
  timeouts?: { connect?: number | string; read?: number | string };
}

export type Endpoint = string | EndpointDetail;

/** An endpoint's URL, whichever way it is written. */
export const endpointUrl = (e: Endpoint): string => (typeof e === 'string' ? e : e.url);

export interface Listing<T> {
  count: number;
  list: T[];
}

export interface Application {
  id: string;
  name: string;
  owner: string;
  throttlingPolicy: string;
  description: string;
  /** ACTIVE or DISABLED. */
  status?: string;
}

export interface Subscription {
  id: string;
  applicationId: string;
  /** In the Publisher's list. */
  applicationName?: string | null;
  apiId: string;
  throttlingPolicy: string;
  status: string;
}

export interface OAuthKeys {
  consumerKey: string;
  consumerSecret?: string;
  keyType: string;
  supportedGrantTypes?: string[];
  /** Registered redirect URIs: any enables the authorization code grant (PKCE). */
  redirectUris?: string[];
}

export interface Tier {
  name: string;
  description: string;
  requestCount: number | null;
  unitSeconds: number;
  /** Bytes per unitSeconds instead of requests (a bandwidth tier). */
  dataAmount?: number;
  /** Subscription tiers: a spike limit under the quota. */
  burst?: { requests: number; per: 'second' | 'minute' };
  stopOnQuota?: boolean;
  revision?: number;
}

export interface User {
  name: string;
  roles: string[];
  status?: string;
}

export interface TryResult {
  status: number;
  headers: [string, string][];
  body: string;
  timeMs: number;
  truncated: boolean;
}
