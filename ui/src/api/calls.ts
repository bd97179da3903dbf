// Every REST call the portals make, through the typed client. Query parameters the
// OpenAPI document does not list yet are passed with a cast (`q()`), until the
// document describes them; regenerate schema.d.ts (`npm run gen:api`) when it does.
import { accessToken } from '../auth';
import { api, ApiFailure, must } from './client';
import type {
  Api,
  Application,
  Listing,
  OAuthKeys,
  Subscription,
  Tier,
  TryResult,
  User,
} from './types';

const q = (query: Record<string, string | number | undefined>) => query as never;

export type TierKind = 'subscription' | 'application' | 'advanced';

export const publisher = {
  async apis(search: string): Promise<Listing<Api>> {
    const r = await api.GET('/api/am/publisher/v1/apis', {
      params: { query: q({ query: search || undefined, limit: 100 }) },
    });
    return must(r) as Listing<Api>;
  },
  async api(id: string): Promise<Api> {
    return must(await api.GET('/api/am/publisher/v1/apis/{apiId}', { params: { path: { apiId: id } } })) as Api;
  },
  async create(body: Partial<Api>): Promise<Api> {
    return must(await api.POST('/api/am/publisher/v1/apis', { body: body as never })) as Api;
  },
  async update(id: string, body: Partial<Api>): Promise<Api> {
    return must(
      await api.PUT('/api/am/publisher/v1/apis/{apiId}', {
        params: { path: { apiId: id } },
        body: body as never,
      }),
    ) as Api;
  },
  /** A copy of the API as a new version (its resources, settings and definition). */
  async newVersion(id: string, newVersion: string, defaultVersion: boolean): Promise<Api> {
    return must(
      await api.POST('/api/am/publisher/v1/apis/copy-api', {
        params: { query: q({ apiId: id, newVersion, defaultVersion: String(defaultVersion) }) },
      }),
    ) as Api;
  },
  async security(id: string): Promise<ApiSecurity> {
    return must(
      await api.GET('/api/am/publisher/v1/apis/{apiId}/security', { params: { path: { apiId: id } } }),
    ) as ApiSecurity;
  },
  async setSecurity(id: string, body: ApiSecurity): Promise<ApiSecurity> {
    return must(
      await api.PUT('/api/am/publisher/v1/apis/{apiId}/security', {
        params: { path: { apiId: id } },
        body: body as never,
      }),
    ) as ApiSecurity;
  },
  /** A JSON Merge Patch of the API (only the fields given change). */
  async patch(id: string, body: Record<string, unknown>): Promise<Api> {
    return must(
      await api.PATCH('/api/am/publisher/v1/apis/{apiId}', { params: { path: { apiId: id } }, body: body as never }),
    ) as Api;
  },
  /** Purges the API's cached answers on every gateway: all (`{}`), a prefix or a tag. */
  async purgeCache(id: string, body: { prefix?: string; tag?: string }): Promise<CachePurge> {
    return must(
      await api.POST('/api/am/publisher/v1/apis/{apiId}/cache/purge', {
        params: { path: { apiId: id } },
        body: body as never,
      }),
    ) as CachePurge;
  },
  async tryMediation(id: string, body: Record<string, unknown>): Promise<unknown> {
    return must(
      await api.POST('/api/am/publisher/v1/apis/{apiId}/mediation/try', {
        params: { path: { apiId: id } },
        body: body as never,
      }),
    );
  },
  /** A SOAP or SOAP_TO_REST API from a WSDL 1.1 (its text, or a zip with its XSDs as base64). */
  async importWsdl(source: { wsdl?: string; zip?: string }, type: string, props: Record<string, unknown>): Promise<Api & { soap?: { problems?: unknown[] } }> {
    return must(
      await api.POST('/api/am/publisher/v1/apis/import-wsdl', {
        body: { ...source, type, additionalProperties: props } as never,
      }),
    ) as Api & { soap?: { problems?: unknown[] } };
  },
  /** A GraphQL API from its SDL schema. */
  async importGraphql(sdl: string, props: Record<string, unknown>): Promise<Api> {
    return must(
      await api.POST('/api/am/publisher/v1/apis/import-graphql-schema', {
        body: { definition: sdl, additionalProperties: props } as never,
      }),
    ) as Api;
  },
  async importOpenApi(definition: unknown, props: Record<string, unknown>): Promise<Api> {
    return must(
      await api.POST('/api/am/publisher/v1/apis/import-openapi', {
        body: { definition, additionalProperties: props } as never,
      }),
    ) as Api;
  },
  /** An OpenAPI document the control plane fetches from `url` (http or https). */
  async importOpenApiUrl(url: string, props: Record<string, unknown>): Promise<Api> {
    return must(
      await api.POST('/api/am/publisher/v1/apis/import-openapi', {
        body: { url, additionalProperties: props } as never,
      }),
    ) as Api;
  },
  /** The tiers of a family, as a publisher offers them on an API. */
  async tiers(kind: TierKind): Promise<Listing<Tier>> {
    return must(
      await api.GET('/api/am/publisher/v1/throttling-policies/{kind}' as never, { params: { path: { kind } } } as never),
    ) as Listing<Tier>;
  },
  /** Refused (409) while the API has subscriptions. */
  async deleteApi(id: string): Promise<void> {
    must(await api.DELETE('/api/am/publisher/v1/apis/{apiId}', { params: { path: { apiId: id } } }));
  },
  async documents(apiId: string): Promise<Listing<ApiDocument>> {
    return must(
      await api.GET('/api/am/publisher/v1/apis/{apiId}/documents', { params: { path: { apiId } } }),
    ) as Listing<ApiDocument>;
  },
  async createDocument(apiId: string, body: DocumentBody): Promise<ApiDocument> {
    return must(
      await api.POST('/api/am/publisher/v1/apis/{apiId}/documents', {
        params: { path: { apiId } },
        body: body as never,
      }),
    ) as ApiDocument;
  },
  async updateDocument(apiId: string, documentId: string, body: DocumentBody): Promise<ApiDocument> {
    return must(
      await api.PUT('/api/am/publisher/v1/apis/{apiId}/documents/{documentId}', {
        params: { path: { apiId, documentId } },
        body: body as never,
      }),
    ) as ApiDocument;
  },
  async deleteDocument(apiId: string, documentId: string): Promise<void> {
    must(
      await api.DELETE('/api/am/publisher/v1/apis/{apiId}/documents/{documentId}', {
        params: { path: { apiId, documentId } },
      }),
    );
  },
  async lifecycle(id: string): Promise<{ state: string; availableTransitions: string[] }> {
    return must(
      await api.GET('/api/am/publisher/v1/apis/{apiId}/lifecycle-state', { params: { path: { apiId: id } } }),
    ) as { state: string; availableTransitions: string[] };
  },
  async changeLifecycle(id: string, action: string): Promise<void> {
    must(
      await api.POST('/api/am/publisher/v1/apis/change-lifecycle', {
        params: { query: q({ apiId: id, action }) },
      }),
    );
  },
  async subscriptions(apiId: string): Promise<Listing<Subscription>> {
    return must(
      await api.GET('/api/am/publisher/v1/subscriptions', { params: { query: q({ apiId }) } }),
    ) as Listing<Subscription>;
  },
  async block(subscriptionId: string): Promise<void> {
    must(
      await api.POST('/api/am/publisher/v1/subscriptions/block-subscription', {
        params: { query: q({ subscriptionId, blockState: 'BLOCKED' }) },
      }),
    );
  },
  async unblock(subscriptionId: string): Promise<void> {
    must(
      await api.POST('/api/am/publisher/v1/subscriptions/unblock-subscription', {
        params: { query: q({ subscriptionId }) },
      }),
    );
  },
};

export const devportal = {
  async apis(search: string): Promise<Listing<Api>> {
    return must(
      await api.GET('/api/am/devportal/v1/apis', {
        params: { query: q({ query: search || undefined, limit: 100 }) },
      }),
    ) as Listing<Api>;
  },
  async api(id: string): Promise<Api> {
    return must(await api.GET('/api/am/devportal/v1/apis/{apiId}', { params: { path: { apiId: id } } })) as Api;
  },
  async definition(id: string): Promise<unknown> {
    return must(
      await api.GET('/api/am/devportal/v1/apis/{apiId}/swagger', { params: { path: { apiId: id } } }),
    );
  },
  async applications(): Promise<Listing<Application>> {
    return must(await api.GET('/api/am/devportal/v1/applications', {})) as Listing<Application>;
  },
  async documents(apiId: string): Promise<Listing<ApiDocument>> {
    return must(
      await api.GET('/api/am/devportal/v1/apis/{apiId}/documents', { params: { path: { apiId } } }),
    ) as Listing<ApiDocument>;
  },
  async application(id: string): Promise<Application> {
    return must(
      await api.GET('/api/am/devportal/v1/applications/{applicationId}', {
        params: { path: { applicationId: id } },
      }),
    ) as Application;
  },
  async createApplication(body: Partial<Application>): Promise<Application> {
    return must(await api.POST('/api/am/devportal/v1/applications', { body: body as never })) as Application;
  },
  /** A JSON Merge Patch of the application: name, description, tier. */
  async updateApplication(id: string, patch: Partial<Application>): Promise<Application> {
    return must(
      await api.PATCH('/api/am/devportal/v1/applications/{applicationId}', {
        params: { path: { applicationId: id } },
        body: patch as never,
      }),
    ) as Application;
  },
  async deleteApplication(id: string): Promise<void> {
    must(
      await api.DELETE('/api/am/devportal/v1/applications/{applicationId}', {
        params: { path: { applicationId: id } },
      }),
    );
  },
  /** Registers the redirect URIs of a key pair (the authorization code grant's). */
  async setRedirectUris(applicationId: string, keyType: 'PRODUCTION' | 'SANDBOX', redirectUris: string[]): Promise<OAuthKeys> {
    return must(
      await api.PUT('/api/am/devportal/v1/applications/{applicationId}/keys/{keyType}', {
        params: { path: { applicationId, keyType } },
        body: { redirectUris } as never,
      }),
    ) as OAuthKeys;
  },
  /** A generated client library (zip) for the API: `typescript`, `python` or `java`. */
  async sdk(apiId: string, language: string): Promise<Blob> {
    const token = await accessToken();
    const r = await fetch(`/api/am/devportal/v1/apis/${encodeURIComponent(apiId)}/sdks/${language}`, {
      headers: token ? { Authorization: `Bearer ${token}` } : {},
    });
    if (!r.ok) {
      const e = (await r.json().catch(() => ({}))) as { code?: string; message?: string };
      throw new ApiFailure(r.status, e.code ?? 'error', e.message ?? `HTTP ${r.status}`);
    }
    return r.blob();
  },
  async subscriptions(filter: { applicationId?: string; apiId?: string }): Promise<Listing<Subscription>> {
    return must(
      await api.GET('/api/am/devportal/v1/subscriptions', { params: { query: q(filter) } }),
    ) as Listing<Subscription>;
  },
  async subscribe(applicationId: string, apiId: string, throttlingPolicy: string): Promise<Subscription> {
    return must(
      await api.POST('/api/am/devportal/v1/subscriptions', {
        body: { applicationId, apiId, throttlingPolicy } as never,
      }),
    ) as Subscription;
  },
  async unsubscribe(id: string): Promise<void> {
    must(
      await api.DELETE('/api/am/devportal/v1/subscriptions/{subscriptionId}', {
        params: { path: { subscriptionId: id } },
      }),
    );
  },
  async keys(applicationId: string): Promise<Listing<OAuthKeys>> {
    return must(
      await api.GET('/api/am/devportal/v1/applications/{applicationId}/keys', {
        params: { path: { applicationId } },
      }),
    ) as Listing<OAuthKeys>;
  },
  async generateKeys(applicationId: string, keyType: string): Promise<OAuthKeys> {
    return must(
      await api.POST('/api/am/devportal/v1/applications/{applicationId}/generate-keys', {
        params: { path: { applicationId } },
        body: { keyType, grantTypes: ['client_credentials'] } as never,
      }),
    ) as OAuthKeys;
  },
  async regenerateSecret(applicationId: string, keyType: 'PRODUCTION' | 'SANDBOX'): Promise<OAuthKeys> {
    return must(
      await api.POST('/api/am/devportal/v1/applications/{applicationId}/keys/{keyType}/regenerate-secret', {
        params: { path: { applicationId, keyType } },
      }),
    ) as OAuthKeys;
  },
  async tryIt(
    applicationId: string,
    req: { method: string; path: string; headers: Record<string, string>; body?: string; keyType: string },
  ): Promise<TryResult> {
    return must(
      await api.POST('/api/am/devportal/v1/applications/{applicationId}/try-it', {
        params: { path: { applicationId } },
        body: req as never,
      }),
    ) as TryResult;
  },
};

/** Which credentials an API accepts (the file's `auth`). */
/** A purge of an API's cached answers, as the control plane recorded it. */
export interface CachePurge {
  id: number;
  prefix?: string;
  tag?: string;
}

export interface ApiSecurity {
  oauth2: boolean;
  api_key: boolean;
  api_key_header?: string;
  api_key_query?: string;
  basic: boolean;
  subscription: boolean;
  backend_jwt?: unknown;
}

export interface ApiKey {
  id: string;
  name: string;
  keyType: string;
  scopes: string[];
  createdTime: number;
  expiresAt: number | null;
  /** Only in the answer that created it. */
  apikey?: string;
}

export const apiKeys = {
  async list(applicationId: string): Promise<Listing<ApiKey>> {
    return must(
      await api.GET('/api/am/devportal/v1/applications/{applicationId}/api-keys', {
        params: { path: { applicationId } },
      }),
    ) as Listing<ApiKey>;
  },
  async create(applicationId: string, name: string, validityPeriod?: number, keyType = 'PRODUCTION'): Promise<ApiKey> {
    return must(
      await api.POST('/api/am/devportal/v1/applications/{applicationId}/api-keys', {
        params: { path: { applicationId } },
        body: { name, keyType, ...(validityPeriod ? { validityPeriod } : {}) } as never,
      }),
    ) as ApiKey;
  },
  async revoke(applicationId: string, keyId: string): Promise<void> {
    must(
      await api.DELETE('/api/am/devportal/v1/applications/{applicationId}/api-keys/{keyId}', {
        params: { path: { applicationId, keyId } },
      }),
    );
  },
};

export const admin = {
  async tiers(kind: TierKind): Promise<Listing<Tier>> {
    return must(
      await api.GET('/api/am/admin/v1/throttling/policies/{kind}', { params: { path: { kind } } }),
    ) as Listing<Tier>;
  },
  async createTier(kind: TierKind, body: Partial<Tier>): Promise<Tier> {
    return must(
      await api.POST('/api/am/admin/v1/throttling/policies/{kind}', {
        params: { path: { kind } },
        body: body as never,
      }),
    ) as Tier;
  },
  /** A JSON Merge Patch of a tier (`null` clears a field: `burst: null` drops the burst limit). */
  async patchTier(kind: TierKind, name: string, body: Record<string, unknown>): Promise<Tier> {
    return must(
      await api.PATCH('/api/am/admin/v1/throttling/policies/{kind}/{name}', {
        params: { path: { kind, name } },
        body: body as never,
      }),
    ) as Tier;
  },
  async deleteTier(kind: TierKind, name: string): Promise<void> {
    must(
      await api.DELETE('/api/am/admin/v1/throttling/policies/{kind}/{name}', {
        params: { path: { kind, name } },
      }),
    );
  },
  async users(): Promise<Listing<User>> {
    return must(await api.GET('/api/am/admin/v1/users', {})) as Listing<User>;
  },
  async createUser(body: { name: string; password: string; roles: string[] }): Promise<void> {
    must(await api.POST('/api/am/admin/v1/users', { body: body as never }));
  },
  async setUserStatus(name: string, status: 'ACTIVE' | 'DISABLED'): Promise<void> {
    must(await api.PATCH('/api/am/admin/v1/users/{name}', { params: { path: { name } }, body: { status } as never }));
  },
  async setUserRoles(name: string, roles: string[]): Promise<void> {
    must(await api.PATCH('/api/am/admin/v1/users/{name}', { params: { path: { name } }, body: { roles } as never }));
  },
  /** Every user's applications, by name; `query` matches the name or the owner. */
  async applications(query: { query?: string; limit: number; offset: number }): Promise<Listing<Application> & { pagination?: { total: number } }> {
    return must(await api.GET('/api/am/admin/v1/applications', { params: { query: q(query) } })) as Listing<Application> & {
      pagination?: { total: number };
    };
  },
  async deleteUser(name: string): Promise<void> {
    must(await api.DELETE('/api/am/admin/v1/users/{name}', { params: { path: { name } } }));
  },
  async gateways(): Promise<GatewayList> {
    return must(await api.GET('/api/am/admin/v1/gateways', {})) as GatewayList;
  },
  async keys(): Promise<{ activeKid: string | null; list: SigningKey[] }> {
    return must(await api.GET('/api/am/admin/v1/keys', {})) as { activeKid: string | null; list: SigningKey[] };
  },
  async rotateKeys(): Promise<void> {
    must(await api.POST('/api/am/admin/v1/keys/rotate', {}));
  },
  async auditLog(query: { user?: string; q?: string; limit: number; offset: number }): Promise<Listing<AuditEntry> & { pagination?: { total: number } }> {
    return must(await api.GET('/api/am/admin/v1/audit-log', { params: { query } })) as Listing<AuditEntry> & {
      pagination?: { total: number };
    };
  },
  async signupSettings(): Promise<SignupSettings> {
    return must(await api.GET('/api/am/admin/v1/settings/self-signup', {})) as SignupSettings;
  },
  async setSignupSettings(body: SignupSettings): Promise<SignupSettings> {
    return must(await api.PUT('/api/am/admin/v1/settings/self-signup', { body })) as SignupSettings;
  },
  async devportalSettings(): Promise<DevportalSettings> {
    return must(await api.GET('/api/am/admin/v1/settings/devportal', {})) as DevportalSettings;
  },
  async setDevportalSettings(body: DevportalSettings): Promise<DevportalSettings> {
    return must(await api.PUT('/api/am/admin/v1/settings/devportal', { body })) as DevportalSettings;
  },
};

export interface AuditEntry {
  version: number;
  previousVersion: number;
  timestamp: number;
  time: string;
  user: string;
  /** The summary with today's names in place of ids. */
  action: string;
  /** The summary as recorded (with ids). */
  summary?: string;
  /** The ids the summary holds: `name` null once the object is deleted. */
  objects?: { id: string; kind: string | null; name: string | null }[];
}

/** An API's document (markdown). */
export interface ApiDocument {
  id: string;
  apiId: string;
  name: string;
  summary: string;
  content: string;
  revision: number;
}

export type DocumentBody = Pick<ApiDocument, 'name' | 'summary' | 'content'>;

export interface SignupSettings {
  enabled: boolean;
  approval: boolean;
}

export interface DevportalSettings {
  anonymousBrowsing: boolean;
}

/** Sign-up needs no credentials: the account is ACTIVE, or PENDING until an admin approves. */
export async function signUp(name: string, password: string): Promise<{ name: string; status: string }> {
  return must(
    await api.POST('/api/am/devportal/v1/self-signup', { body: { name, password } }),
  ) as { name: string; status: string };
}

/** What a visitor may do before signing in (no credentials needed to ask). */
export async function publicSettings(): Promise<{ anonymousBrowsing: boolean; selfSignup: boolean }> {
  return must(await api.GET('/api/am/devportal/v1/settings', {})) as { anonymousBrowsing: boolean; selfSignup: boolean };
}
export interface Gateway {
  id: string;
  servingVersion?: number;
  serving_version?: number;
  lastSeenMsAgo?: number;
  last_seen_ms_ago?: number;
  upToDate?: boolean;
  up_to_date?: boolean;
  lastConvergenceMs?: number | null;
  last_convergence_ms?: number | null;
  versionsBehind?: number;
  /** How long it may have been out of date: behind the newest version, or silent past its next poll. */
  lagMs?: number;
  lagging?: boolean;
  applyMs?: number | null;
  controlPlane?: string;
  servingHash?: string;
  /** Each tracked endpoint's state as the gateway last reported it. */
  endpoints?: EndpointState[];
  /** The gateway's last status report, as it sent it (`endpoints` aside). */
  report?: Record<string, unknown>;
}

/** One endpoint of an API with resilience settings, as a gateway reports it. */
export interface EndpointState {
  /** The API's name. */
  api: string;
  version: string;
  context: string;
  /** `{context}/{version}` (host-prefixed for a host-limited API). */
  id: string;
  endpoint: string;
  pool: 'production' | 'sandbox';
  /** active, suspended (circuit open), probing (half-open) or unhealthy. */
  state: string;
  /** When the suspension ends (Unix ms), while suspended. */
  untilMs?: number;
  failures: number;
  inFlight: number;
  suspensions: number;
}

export interface GatewayList {
  controlPlaneVersion: number;
  maxLagMs?: number;
  lagging?: number;
  count?: number;
  list: Gateway[];
}

export interface SigningKey {
  kid: string;
  alg?: string;
  active: boolean;
  createdAt?: number;
  created_at?: number;
}
