// The Developer Portal: the catalogue, an API's page (its OpenAPI operations, the
// document and generated SDKs to download, subscribe at a tier unless the API is
// deprecated, unsubscribe, the try-it console with a body pre-filled from the document),
// applications (DevPortalApps.tsx). Without a user (anonymous browsing) only the
// catalogue and the APIs' pages, with an invitation to sign in or up where subscribing
// would be.
import { useMemo, useState } from 'react';
import {
  Anchor,
  Badge,
  Button,
  Card,
  Code,
  Group,
  Menu,
  Select,
  SimpleGrid,
  Stack,
  Table,
  Text,
  TextInput,
  Textarea,
  Title,
} from '@mantine/core';
import { devportal } from '../api/calls';
import type { KeyType, PortalApi as Api, Tier, TryRequest, TryResult } from '../api/types';
import { login, type User } from '../auth';
import { errorText, useLoad } from '../lib/load';
import { buildPath, operations, type Operation } from '../lib/openapi';
import { Link, match } from '../router';
import { tokenText } from './TokenLimits';
import { ErrorNote, Loading, StateBadge } from './common';
import { ApiDocs } from './ApiDocs';
import { saveFile } from '../lib/download';
import { toYaml } from '../lib/yaml';
import { AppList, AppPage, SubscriptionLine } from './DevPortalApps';
import { McpServers } from './DevPortalMcp';

export const devportalNav = [
  { href: '/devportal', label: 'APIs' },
  { href: '/devportal/applications', label: 'Applications' },
  { href: '/devportal/mcp-servers', label: 'MCP servers' },
];

export function DevPortalPage({ path, user }: { path: string; user: User | null }) {
  const apiPage = match('/devportal/apis/:id', path);
  if (apiPage) return <ApiPage id={apiPage.id} signedIn={user !== null} />;
  const appPage = match('/devportal/applications/:id', path);
  if (appPage) return <AppPage id={appPage.id} />;
  if (path.startsWith('/devportal/applications')) return <AppList />;
  if (path.startsWith('/devportal/mcp-servers')) return <McpServers />;
  return <Catalogue />;
}

function Catalogue() {
  const [search, setSearch] = useState('');
  const apis = useLoad(() => devportal.apis(search), [search]);
  return (
    <Stack>
      <Title order={2}>APIs</Title>
      <TextInput label="Search" placeholder="name or description" value={search} onChange={(e) => setSearch(e.currentTarget.value)} />
      <Loading error={apis.error} loading={apis.loading && !apis.data}>
        <SimpleGrid cols={{ base: 1, sm: 2, lg: 3 }}>
          {apis.data?.list.map((a) => (
            <Card key={a.id} withBorder padding="lg" component={Link} href={`/devportal/apis/${a.id}`} aria-label={`${a.name} ${a.version}`}>
              <Group justify="space-between" mb="xs">
                <Text fw={600}>{a.name}</Text>
                <Badge variant="light">{a.version}</Badge>
              </Group>
              <Text size="sm" c="dimmed" lineClamp={3}>
                {a.description || 'No description.'}
              </Text>
              <Text size="xs" mt="sm">
                <code>{a.context}</code>
              </Text>
            </Card>
          ))}
        </SimpleGrid>
        {apis.data?.list.length === 0 && <Text c="dimmed">No API is published yet.</Text>}
      </Loading>
    </Stack>
  );
}

interface GraphqlSection {
  schema?: string;
  operations?: { name: string; type: string; scopes?: string[] }[];
}

/** A GraphQL API's schema (SDL) and its operations (root fields) with their scopes. */
function GraphqlSchema({ graphql }: { graphql: GraphqlSection }) {
  return (
    <Card withBorder component="section" aria-label="GraphQL schema">
      <Title order={3}>GraphQL schema</Title>
      {graphql.operations && graphql.operations.length > 0 && (
        <Group gap={6} my="sm">
          {graphql.operations.map((o) => (
            <Badge key={`${o.type} ${o.name}`} variant="light" title={o.scopes?.length ? `scopes: ${o.scopes.join(', ')}` : undefined}>
              {o.type} {o.name}
            </Badge>
          ))}
        </Group>
      )}
      <Code block mah={420} style={{ overflow: 'auto' }}>
        {graphql.schema}
      </Code>
    </Card>
  );
}

function SignInToUse({ path }: { path: string }) {
  return (
    <Card withBorder component="section" aria-label="Subscribe">
      <Group justify="space-between">
        <Text>Sign in to subscribe to this API and try it from the console.</Text>
        <Group gap="sm">
          <Button component={Link} href="/signup" variant="default">
            Sign up
          </Button>
          <Button onClick={() => void login(path)}>Sign in to subscribe</Button>
        </Group>
      </Group>
    </Card>
  );
}

/** The gateway path of an API's resource: `/{context}/{version}{path}`. */
export function gatewayBase(api: Api): string {
  return `${api.context.replace(/\/$/, '')}/${api.version}`;
}

function ApiPage({ id, signedIn }: { id: string; signedIn: boolean }) {
  const api = useLoad(() => devportal.api(id), [id]);
  const def = useLoad(() => devportal.definition(id).catch(() => null), [id]);
  const graphql = (api.data as (Api & { graphql?: GraphqlSection }) | undefined)?.graphql;
  const ops = useMemo(() => {
    const fromDoc = operations(def.data);
    if (fromDoc.length || !api.data) return fromDoc;
    // No definition: one operation a resource.
    return api.data.resources.flatMap((r) =>
      r.methods.map((m) => ({ method: m, path: r.path, params: [], hasBody: m !== 'GET', responses: [] }) as Operation),
    );
  }, [def.data, api.data]);
  return (
    <Loading error={api.error} loading={api.loading && !api.data}>
      {api.data && (
        <Stack>
          <div>
            <Anchor component={Link} href="/devportal" size="sm">
              ← APIs
            </Anchor>
            <Group>
              <Title order={2}>{api.data.name}</Title>
              <Badge variant="light">{api.data.version}</Badge>
              <StateBadge state={api.data.lifecycleStatus} />
            </Group>
            <Text c="dimmed">{api.data.description}</Text>
            <Text size="sm">
              Gateway path: <code>{gatewayBase(api.data)}</code>
            </Text>
          </div>
          <Downloads api={api.data} definition={def.data} signedIn={signedIn} />
          {signedIn ? <Subscribe api={api.data} /> : <SignInToUse path={`/devportal/apis/${id}`} />}
          {graphql?.schema && <GraphqlSchema graphql={graphql} />}
          <ApiDocs apiId={id} />
          <Title order={3}>Operations</Title>
          <Stack gap="xs">
            {ops.map((o) => (
              <Card key={`${o.method} ${o.path}`} withBorder padding="sm">
                <Group gap="sm">
                  <Badge color={METHOD_COLORS[o.method] ?? 'gray'} w={80}>
                    {o.method}
                  </Badge>
                  <Code>{o.path}</Code>
                  <Text size="sm">{o.summary}</Text>
                </Group>
                {o.params.length > 0 && (
                  <Text size="xs" c="dimmed" mt={4}>
                    Parameters: {o.params.map((p) => `${p.name} (${p.in}${p.required ? ', required' : ''})`).join(', ')}
                  </Text>
                )}
                {o.responses.length > 0 && (
                  <Text size="xs" c="dimmed">
                    Responses: {o.responses.map((r) => `${r.status}${r.description ? ` ${r.description}` : ''}`).join(' · ')}
                  </Text>
                )}
              </Card>
            ))}
          </Stack>
          {signedIn && <TryIt key={ops.map((o) => `${o.method} ${o.path}`).join()} api={api.data} ops={ops} />}
        </Stack>
      )}
    </Loading>
  );
}

const METHOD_COLORS: Record<string, string> = {
  GET: 'blue',
  POST: 'green',
  PUT: 'orange',
  PATCH: 'yellow',
  DELETE: 'red',
};

/** What a tier allows: its requests per window, burst and token budgets. */
function tierText(t: Tier): string {
  const requests = t.requestCount == null ? 'unlimited requests' : `${t.requestCount} requests / ${t.unitSeconds} s`;
  const burst = t.burst ? `, burst ${t.burst.requests} / ${t.burst.per}` : '';
  const tokens = t.tokenLimits?.length ? `; ${tokenText(t.tokenLimits)}` : '';
  return `${t.name}: ${requests}${burst}${tokens}`;
}

function Subscribe({ api }: { api: Api }) {
  const apps = useLoad(() => devportal.applications(), []);
  // Subscriptions are listed per application: the caller's to this API.
  const subs = useLoad(async () => {
    const mine = await devportal.applications();
    const each = await Promise.all(
      mine.list.map((a) => devportal.subscriptions({ applicationId: a.id, apiId: api.id })),
    );
    return { list: each.flatMap((l) => l.list) };
  }, [api.id]);
  const [app, setApp] = useState<string | null>(null);
  const [tier, setTier] = useState<string | null>(api.policies[0] ?? null);
  // What each tier allows (requests, token budgets), shown under the choice.
  const tiers = useLoad(() => devportal.tiers('subscription'), []);
  const chosen = tiers.data?.list.find((t) => t.name === tier);
  // WSO2: a deprecated API keeps its subscribers but takes no new ones.
  const deprecated = api.lifecycleStatus === 'DEPRECATED';
  const [error, setError] = useState<string | null>(null);
  const subscribe = async () => {
    setError(null);
    try {
      if (!app || !tier) throw new Error('Choose an application and a tier.');
      await devportal.subscribe(app, api.id, tier);
      subs.reload();
    } catch (e) {
      setError(errorText(e));
    }
  };
  const appName = (id: string) => apps.data?.list.find((a) => a.id === id)?.name ?? id;
  return (
    <Card withBorder component="section" aria-label="Subscribe">
      <Title order={4} mb="sm">
        Subscriptions
      </Title>
      {subs.data && subs.data.list.length > 0 && (
        <Stack gap={4} mb="sm" role="list">
          {subs.data.list.map((s) => (
            <SubscriptionLine
              key={s.id}
              sub={s}
              label={appName(s.applicationId)}
              href={`/devportal/applications/${s.applicationId}`}
              onGone={subs.reload}
            />
          ))}
        </Stack>
      )}
      {deprecated ? (
        <Text c="orange" role="note">
          This API is deprecated: it takes no new subscriptions. Existing ones keep working until it is retired.
        </Text>
      ) : (
        <Group align="flex-end">
          <Select
            label="Application"
            placeholder={apps.data?.list.length ? 'Choose' : 'Create an application first'}
            data={(apps.data?.list ?? []).map((a) => ({ value: a.id, label: a.name }))}
            value={app}
            onChange={setApp}
          />
          <Select label="Tier" data={api.policies} value={tier} onChange={setTier} />
          <Button onClick={() => void subscribe()}>Subscribe</Button>
        </Group>
      )}
      {chosen && !deprecated && (
        <Text size="sm" c="dimmed" mt={4} aria-label="Tier limits">
          {tierText(chosen)}
        </Text>
      )}
      <ErrorNote error={error} />
    </Card>
  );
}

function TryIt({ api, ops }: { api: Api; ops: Operation[] }) {
  const apps = useLoad(() => devportal.applications(), []);
  const [app, setApp] = useState<string | null>(null);
  const [keyType, setKeyType] = useState<KeyType>('PRODUCTION');
  const [opKey, setOpKey] = useState<string | null>(ops[0] ? `${ops[0].method} ${ops[0].path}` : null);
  const op = ops.find((o) => `${o.method} ${o.path}` === opKey);
  const [values, setValues] = useState<Record<string, string>>({});
  const [pathOverride, setPathOverride] = useState('');
  const [headers, setHeaders] = useState('');
  const [body, setBody] = useState(op?.bodyExample ?? '');
  const [result, setResult] = useState<TryResult | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const resourcePath = op ? buildPath(op.path.replace('/*', '/'), values, op) : '/';
  const fullPath = gatewayBase(api) + (pathOverride || resourcePath);
  const send = async () => {
    setBusy(true);
    setError(null);
    try {
      if (!app) throw new Error('Choose the application whose key to use.');
      const h: Record<string, string> = {};
      for (const line of headers.split('\n')) {
        const i = line.indexOf(':');
        if (i > 0) h[line.slice(0, i).trim()] = line.slice(i + 1).trim();
      }
      if (body && !Object.keys(h).some((k) => k.toLowerCase() === 'content-type')) h['Content-Type'] = 'application/json';
      setResult(
        await devportal.tryIt(app, {
          // The definition's methods, upper-cased (lib/openapi.ts): HTTP methods all.
          method: (op?.method ?? 'GET') as TryRequest['method'],
          path: fullPath,
          headers: h,
          body: body || undefined,
          keyType,
        }),
      );
    } catch (e) {
      setResult(null);
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <Card withBorder component="section" aria-label="Try it">
      <Title order={3} mb="xs">
        Try it
      </Title>
      <Text size="sm" c="dimmed" mb="sm">
        Sent through the control plane to the gateway with a one-minute token of the chosen application's production or sandbox keys.
      </Text>
      <Stack>
        <Group grow align="flex-end">
          <Select
            label="Application"
            placeholder="Choose"
            data={(apps.data?.list ?? []).map((a) => ({ value: a.id, label: a.name }))}
            value={app}
            onChange={setApp}
          />
          <Select
            label="Key type"
            description="Sandbox keys reach the API's sandbox endpoints"
            data={['PRODUCTION', 'SANDBOX']}
            value={keyType}
            onChange={(v) => setKeyType(v === 'SANDBOX' ? 'SANDBOX' : 'PRODUCTION')}
            allowDeselect={false}
          />
          <Select
            label="Operation"
            data={ops.map((o) => `${o.method} ${o.path}`)}
            value={opKey}
            onChange={(v) => {
              setOpKey(v);
              setValues({});
              setBody(ops.find((o) => `${o.method} ${o.path}` === v)?.bodyExample ?? '');
            }}
          />
        </Group>
        {op?.params
          .filter((p) => p.in === 'path' || p.in === 'query')
          .map((p) => (
            <TextInput
              key={`${p.in}:${p.name}`}
              label={`${p.name} (${p.in})`}
              description={p.description}
              required={p.required}
              value={values[p.name] ?? ''}
              onChange={(e) => setValues({ ...values, [p.name]: e.currentTarget.value })}
            />
          ))}
        <TextInput
          label="Path under the API"
          description="Optional: overrides the operation's path"
          placeholder={resourcePath}
          value={pathOverride}
          onChange={(e) => setPathOverride(e.currentTarget.value)}
        />
        <Textarea label="Headers" description="One Name: value a line" autosize minRows={1} value={headers} onChange={(e) => setHeaders(e.currentTarget.value)} />
        {(op?.hasBody ?? false) && (
          <Textarea
            label="Body"
            description={op?.bodyExample ? "Pre-filled from the API's example or schema" : undefined}
            autosize
            minRows={3}
            value={body}
            onChange={(e) => setBody(e.currentTarget.value)}
          />
        )}
        <Group>
          <Button onClick={() => void send()} loading={busy}>
            Send
          </Button>
          <Code>
            {op?.method ?? 'GET'} {fullPath}
          </Code>
        </Group>
        <ErrorNote error={error} />
        {result && (
          <Stack gap="xs" aria-label="Response" role="region">
            <Group>
              <Badge size="lg" color={result.status < 300 ? 'green' : result.status < 500 ? 'orange' : 'red'} data-testid="try-status">
                {result.status}
              </Badge>
              <Text size="sm" c="dimmed">
                {result.timeMs} ms
              </Text>
            </Group>
            <Table withTableBorder fz="xs">
              <Table.Tbody>
                {result.headers.map(([k, v], i) => (
                  <Table.Tr key={i}>
                    <Table.Td>{k}</Table.Td>
                    <Table.Td style={{ wordBreak: 'break-all' }}>{v}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
            <Code block>{prettyBody(result.body)}</Code>
            {result.truncated && <Text size="xs">The body was cut at 1 MiB.</Text>}
          </Stack>
        )}
      </Stack>
    </Card>
  );
}

const SDK_LANGUAGES = [
  { id: 'typescript', label: 'TypeScript' },
  { id: 'python', label: 'Python' },
  { id: 'java', label: 'Java' },
] as const;

/** The API's OpenAPI document (JSON or YAML) and, for a signed-in user, a client SDK
 * generated from it by the control plane. */
function Downloads({ api, definition, signedIn }: { api: Api; definition: unknown; signedIn: boolean }) {
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const base = `${api.name}-${api.version}`.replace(/[^A-Za-z0-9._-]+/g, '-');
  const sdk = async (lang: 'typescript' | 'python' | 'java') => {
    setBusy(lang);
    setError(null);
    try {
      saveFile(`${base}-${lang}-sdk.zip`, await devportal.sdk(api.id, lang));
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(null);
    }
  };
  return (
    <Card withBorder component="section" aria-label="Downloads" padding="sm">
      <Group gap="xs" wrap="wrap">
        <Text size="sm" fw={600}>
          OpenAPI
        </Text>
        <Button
          size="xs"
          variant="default"
          disabled={!definition}
          onClick={() => saveFile(`${base}.json`, JSON.stringify(definition, null, 2), 'application/json')}
        >
          Download JSON
        </Button>
        <Button size="xs" variant="default" disabled={!definition} onClick={() => saveFile(`${base}.yaml`, toYaml(definition), 'application/yaml')}>
          Download YAML
        </Button>
        {signedIn && (
          <Menu position="bottom-start">
            <Menu.Target>
              <Button size="xs" variant="default" loading={busy !== null}>
                Download SDK
              </Button>
            </Menu.Target>
            <Menu.Dropdown>
              {SDK_LANGUAGES.map((l) => (
                <Menu.Item key={l.id} onClick={() => void sdk(l.id)}>
                  {l.label} SDK
                </Menu.Item>
              ))}
            </Menu.Dropdown>
          </Menu>
        )}
      </Group>
      <ErrorNote error={error} />
    </Card>
  );
}

function prettyBody(body: string): string {
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}
