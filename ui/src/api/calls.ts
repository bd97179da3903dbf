// Every REST call the portals make, through the typed client: paths, parameters, bodies
// and answers are typed by the control plane's OpenAPI document (schema.d.ts, regenerated
// by `npm run gen:api`), so a call the document does not describe does not compile.
import { api, must } from './client';
import type { components } from './schema';
import type {
  Api,
  ApiKey,
  ApiSecurity,
  Application,
  AuditEntry,
  DevportalSettings,
  McpAuditRecord,
  GatewayList,
  KeyType,
  LifecycleAction,
  Listing,
  OAuthKeys,
  PortalApi,
  SignupSettings,
  Subscription,
  Tier,
  TryResult,
  User,
} from './types';

export type { ApiKey, ApiSecurity, AuditEntry, McpAuditRecord, DevportalSettings, Gateway, GatewayList, SignupSettings, SigningKey } from './types';

type Schemas = components['schemas'];

export type TierKind = 'subscription' | 'application' | 'advanced';

export const publisher = {
  async apis(search: string): Promise<Listing<Api>> {
    const r = await api.GET('/api/am/publisher/v1/apis', {
      params: { query: { query: search || undefined, limit: 100 } },
    });
    return must(r);
  },
  async api(id: string): Promise<Api> {
    return must(await api.GET('/api/am/publisher/v1/apis/{apiId}', { params: { path: { apiId: id } } }));
  },
  async create(body: Schemas['Api']): Promise<Api> {
    return must(await api.POST('/api/am/publisher/v1/apis', { body }));
  },
  async update(id: string, body: Schemas['ApiUpdate']): Promise<Api> {
    return must(
      await api.PUT('/api/am/publisher/v1/apis/{apiId}', {
        params: { path: { apiId: id } },
        body,
      }),
    );
  },
  /** A copy of the API as a new version (its resources, settings and definition). */
  async newVersion(id: string, newVersion: string, defaultVersion: boolean): Promise<Api> {
    return must(
      await api.POST('/api/am/publisher/v1/apis/copy-api', {
        params: { query: { apiId: id, newVersion, defaultVersion } },
      }),
    );
  },
  async security(id: string): Promise<ApiSecurity> {
    return must(
      await api.GET('/api/am/publisher/v1/apis/{apiId}/security', { params: { path: { apiId: id } } }),
    );
  },
  async setSecurity(id: string, body: ApiSecurity): Promise<ApiSecurity> {
    return must(
      await api.PUT('/api/am/publisher/v1/apis/{apiId}/security', {
        params: { path: { apiId: id } },
        body,
      }),
    );
  },
  /** A JSON Merge Patch of the API (only the fields given change). */
  async patch(id: string, body: Schemas['ApiUpdate']): Promise<Api> {
    return must(
      await api.PATCH('/api/am/publisher/v1/apis/{apiId}', { params: { path: { apiId: id } }, body }),
    );
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
  /** The API's operations as MCP tools: served or not, names, descriptions, input schemas. */
  async mcpTools(id: string): Promise<Schemas['McpTools']> {
    return must(
      await api.GET('/api/am/publisher/v1/apis/{apiId}/mcp-tools', { params: { path: { apiId: id } } }),
    );
  },
  async tryMediation(id: string, body: Schemas['MediationTryInput']): Promise<Schemas['MediationTryResult']> {
    return must(
      await api.POST('/api/am/publisher/v1/apis/{apiId}/mediation/try', {
        params: { path: { apiId: id } },
        body,
      }),
    );
  },
  /** A SOAP or SOAP_TO_REST API from a WSDL 1.1 (its text, or a zip with its XSDs as base64). */
  async importWsdl(source: { wsdl?: string; zip?: string }, type: 'SOAP' | 'SOAP_TO_REST', props: Record<string, unknown>): Promise<Api & { soap?: { problems?: unknown[] } }> {
    return must(
      await api.POST('/api/am/publisher/v1/apis/import-wsdl', {
        body: { ...source, type, additionalProperties: props },
      }),
    );
  },
  /** A GraphQL API from its SDL schema. */
  async importGraphql(sdl: string, props: Record<string, unknown>): Promise<Api> {
    return must(
      await api.POST('/api/am/publisher/v1/apis/import-graphql-schema', {
        body: { definition: sdl, additionalProperties: props },
      }),
    );
  },
  async importOpenApi(definition: unknown, props: Record<string, unknown>): Promise<Api> {
    return must(
      await api.POST('/api/am/publisher/v1/apis/import-openapi', {
        body: { definition, additionalProperties: props },
      }),
    );
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
  async lifecycle(id: string): Promise<Schemas['LifecycleState']> {
    return must(
      await api.GET('/api/am/publisher/v1/apis/{apiId}/lifecycle-state', { params: { path: { apiId: id } } }),
    );
  },
  async changeLifecycle(id: string, action: LifecycleAction): Promise<void> {
    must(
      await api.POST('/api/am/publisher/v1/apis/change-lifecycle', {
        params: { query: { apiId: id, action } },
      }),
    );
  },
  async subscriptions(apiId: string): Promise<Listing<Subscription>> {
    return must(
      await api.GET('/api/am/publisher/v1/subscriptions', { params: { query: { apiId } } }),
    );
  },
  async block(subscriptionId: string): Promise<void> {
    must(
      await api.POST('/api/am/publisher/v1/subscriptions/block-subscription', {
        params: { query: { subscriptionId, blockState: 'BLOCKED' } },
      }),
    );
  },
  async unblock(subscriptionId: string): Promise<void> {
    must(
      await api.POST('/api/am/publisher/v1/subscriptions/unblock-subscription', {
        params: { query: { subscriptionId } },
      }),
    );
  },
};

export const devportal = {
  async apis(search: string): Promise<Listing<PortalApi>> {
    return must(
      await api.GET('/api/am/devportal/v1/apis', {
        params: { query: { query: search || undefined, limit: 100 } },
      }),
    );
  },
  /** The visible APIs that are MCP servers, with their endpoint URLs and tools. */
  async mcpServers(search: string): Promise<Listing<Schemas['McpServer']>> {
    return must(
      await api.GET('/api/am/devportal/v1/mcp-servers', {
        params: { query: { query: search || undefined, limit: 100 } },
      }),
    );
  },
  async api(id: string): Promise<PortalApi> {
    return must(await api.GET('/api/am/devportal/v1/apis/{apiId}', { params: { path: { apiId: id } } }));
  },
  /** A generated client library as a zip (typescript, python, java); 503 names what the
   * control plane lacks when it has no generator. */
  async sdk(id: string, language: 'typescript' | 'python' | 'java'): Promise<Blob> {
    return must(
      await api.GET('/api/am/devportal/v1/apis/{apiId}/sdks/{language}', {
        params: { path: { apiId: id, language } },
        parseAs: 'blob',
      }),
    );
  },
  async definition(id: string): Promise<unknown> {
    return must(
      await api.GET('/api/am/devportal/v1/apis/{apiId}/swagger', { params: { path: { apiId: id } } }),
    );
  },
  async applications(): Promise<Listing<Application>> {
    return must(await api.GET('/api/am/devportal/v1/applications', {}));
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
    );
  },
  async createApplication(body: Schemas['ApplicationInput']): Promise<Application> {
    return must(await api.POST('/api/am/devportal/v1/applications', { body }));
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
  async subscriptions(filter: { applicationId: string; apiId?: string }): Promise<Listing<Subscription>> {
    return must(
      await api.GET('/api/am/devportal/v1/subscriptions', { params: { query: filter } }),
    );
  },
  /** The tiers of a family with their limits (requests, burst, token budgets). */
  async tiers(kind: TierKind): Promise<Listing<Tier>> {
    return must(
      await api.GET('/api/am/devportal/v1/throttling-policies/{kind}' as never, { params: { path: { kind } } } as never),
    ) as Listing<Tier>;
  },
  async subscribe(applicationId: string, apiId: string, throttlingPolicy: string): Promise<Subscription> {
    return must(
      await api.POST('/api/am/devportal/v1/subscriptions', {
        body: { applicationId, apiId, throttlingPolicy },
      }),
    );
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
    );
  },
  async generateKeys(applicationId: string, keyType: KeyType): Promise<OAuthKeys> {
    return must(
      await api.POST('/api/am/devportal/v1/applications/{applicationId}/generate-keys', {
        params: { path: { applicationId } },
        body: { keyType, grantTypes: ['client_credentials'] },
      }),
    );
  },
  async regenerateSecret(applicationId: string, keyType: KeyType): Promise<OAuthKeys> {
    return must(
      await api.POST('/api/am/devportal/v1/applications/{applicationId}/keys/{keyType}/regenerate-secret', {
        params: { path: { applicationId, keyType } },
      }),
    );
  },
  async tryIt(
    applicationId: string,
    req: Schemas['TryItInput'],
  ): Promise<TryResult> {
    return must(
      await api.POST('/api/am/devportal/v1/applications/{applicationId}/try-it', {
        params: { path: { applicationId } },
        body: req,
      }),
    );
  },
};

/** A purge of an API's cached answers, as the control plane recorded it. */
export interface CachePurge {
  id: number;
  prefix?: string;
  tag?: string;
}

export const apiKeys = {
  async list(applicationId: string): Promise<Listing<ApiKey>> {
    return must(
      await api.GET('/api/am/devportal/v1/applications/{applicationId}/api-keys', {
        params: { path: { applicationId } },
      }),
    );
  },
  async create(
    applicationId: string,
    name: string,
    validityPeriod?: number,
    keyType: KeyType = 'PRODUCTION',
  ): Promise<ApiKey> {
    return must(
      await api.POST('/api/am/devportal/v1/applications/{applicationId}/api-keys', {
        params: { path: { applicationId } },
        body: { name, keyType, ...(validityPeriod ? { validityPeriod } : {}) },
      }),
    );
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
    );
  },
  async createTier(kind: TierKind, body: Schemas['TierInput']): Promise<Tier> {
    return must(
      await api.POST('/api/am/admin/v1/throttling/policies/{kind}', {
        params: { path: { kind } },
        body,
      }),
    );
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
  /** Every user's applications (the DevPortal's list is the caller's own). */
  async users(): Promise<Listing<User>> {
    return must(await api.GET('/api/am/admin/v1/users', {}));
  },
  async createUser(body: Schemas['UserInput']): Promise<void> {
    must(await api.POST('/api/am/admin/v1/users', { body }));
  },
  async setUserStatus(name: string, status: 'ACTIVE' | 'DISABLED'): Promise<void> {
    must(await api.PATCH('/api/am/admin/v1/users/{name}', { params: { path: { name } }, body: { status } }));
  },
  async setUserRoles(name: string, roles: string[]): Promise<void> {
    must(await api.PATCH('/api/am/admin/v1/users/{name}', { params: { path: { name } }, body: { roles } as never }));
  },
  /** Every user's applications, by name; `query` matches the name or the owner. */
  async applications(query: { query?: string; limit: number; offset: number }): Promise<Listing<Application> & { pagination?: { total: number } }> {
    return must(await api.GET('/api/am/admin/v1/applications', { params: { query } })) as Listing<Application> & {
      pagination?: { total: number };
    };
  },
  async deleteUser(name: string): Promise<void> {
    must(await api.DELETE('/api/am/admin/v1/users/{name}', { params: { path: { name } } }));
  },
  async gateways(): Promise<GatewayList> {
    return must(await api.GET('/api/am/admin/v1/gateways', {}));
  },
  async keys(): Promise<components['schemas']['SigningKeys']> {
    return must(await api.GET('/api/am/admin/v1/keys', {}));
  },
  async rotateKeys(): Promise<void> {
    must(await api.POST('/api/am/admin/v1/keys/rotate', {}));
  },
  async auditLog(query: { user?: string; q?: string; limit: number; offset: number }): Promise<Listing<AuditEntry> & { pagination?: { total: number } }> {
    return must(await api.GET('/api/am/admin/v1/audit-log', { params: { query } }));
  },
  async mcpAudit(query: {
    apiId?: string;
    tool?: string;
    applicationId?: string;
    outcome?: McpAuditRecord['outcome'];
    limit: number;
    offset: number;
  }): Promise<Listing<McpAuditRecord> & { pagination?: { total: number } }> {
    return must(await api.GET('/api/am/admin/v1/mcp-audit', { params: { query } }));
  },
  async signupSettings(): Promise<SignupSettings> {
    return must(await api.GET('/api/am/admin/v1/settings/self-signup', {}));
  },
  async setSignupSettings(body: SignupSettings): Promise<SignupSettings> {
    return must(await api.PUT('/api/am/admin/v1/settings/self-signup', { body }));
  },
  async devportalSettings(): Promise<DevportalSettings> {
    return must(await api.GET('/api/am/admin/v1/settings/devportal', {}));
  },
  async setDevportalSettings(body: DevportalSettings): Promise<DevportalSettings> {
    return must(await api.PUT('/api/am/admin/v1/settings/devportal', { body }));
  },
};

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

/** Sign-up needs no credentials: the account is ACTIVE, or PENDING until an admin approves. */
export async function signUp(name: string, password: string): Promise<{ name: string; status: string }> {
  return must(
    await api.POST('/api/am/devportal/v1/self-signup', { body: { name, password } }),
  );
}

/** What a visitor may do before signing in (no credentials needed to ask). */
export async function publicSettings(): Promise<{ anonymousBrowsing: boolean; selfSignup: boolean }> {
  return must(await api.GET('/api/am/devportal/v1/settings', {}));
}
