// The Publisher portal: APIs (list and search; create from scratch or from an OpenAPI
// file, a WSDL or a GraphQL schema), an API's page (edit; resources, CORS,
// transformations and request handling; lifecycle actions, confirmed where they cut
// subscribers off; documents; subscriptions with block/unblock; delete, its subscriptions
// shown first).
import { useState } from 'react';
import {
  Anchor,
  Button,
  Card,
  FileInput,
  Group,
  Modal,
  MultiSelect,
  SegmentedControl,
  Switch,
  Stack,
  Table,
  Tabs,
  Text,
  TextInput,
  Textarea,
  Title,
} from '@mantine/core';
import { publisher } from '../api/calls';
import { endpointUrl, type Api, type Endpoint } from '../api/types';
import type { User } from '../auth';
import { errorText, useLoad } from '../lib/load';
import { Link, match, navigate } from '../router';
import { ErrorNote, Loading, StateBadge } from './common';
import { DocumentsEditor } from './PublisherDocuments';
import { DeleteApi, Lifecycle } from './PublisherLifecycle';
import { LazyDashboards } from './LazyDashboards';
import { CorsEditor, ResourcesEditor, SecurityEditor, TransformationsEditor } from './PublisherPolicies';
import { RequestHandlingEditor } from './PublisherRequestHandling';
import { ResilienceEditor } from './PublisherResilience';
import { CacheEditor } from './PublisherCache';
import { McpEditor } from './PublisherMcp';

export const publisherNav = [{ href: '/publisher', label: 'APIs' }];

export function PublisherPage({ path, user }: { path: string; user: User }) {
  const m = match('/publisher/apis/:id', path);
  if (m) return <ApiDetail id={m.id} user={user} />;
  return <ApiList user={user} />;
}

function ApiList({ user }: { user: User }) {
  const [search, setSearch] = useState('');
  const [creating, setCreating] = useState<null | CreateKind>(null);
  const apis = useLoad(() => publisher.apis(search), [search]);
  const canCreate = user.scopes.includes('apim:api_create');
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>APIs</Title>
        {canCreate && (
          <Group>
            <Button onClick={() => setCreating('openapi')}>Import OpenAPI</Button>
            <Button variant="default" onClick={() => setCreating('wsdl')}>
              Import WSDL
            </Button>
            <Button variant="default" onClick={() => setCreating('graphql')}>
              Import GraphQL schema
            </Button>
            <Button variant="default" onClick={() => setCreating('scratch')}>
              Create API
            </Button>
          </Group>
        )}
      </Group>
      <TextInput
        label="Search"
        placeholder="name, context or description"
        value={search}
        onChange={(e) => setSearch(e.currentTarget.value)}
      />
      <Loading error={apis.error} loading={apis.loading && !apis.data}>
        <Table striped highlightOnHover aria-label="APIs">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Name</Table.Th>
              <Table.Th>Version</Table.Th>
              <Table.Th>Context</Table.Th>
              <Table.Th>State</Table.Th>
              <Table.Th>Provider</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {apis.data?.list.map((a) => (
              <Table.Tr key={a.id}>
                <Table.Td>
                  <Anchor component={Link} href={`/publisher/apis/${a.id}`}>
                    {a.name}
                  </Anchor>
                </Table.Td>
                <Table.Td>{a.version}</Table.Td>
                <Table.Td>
                  <code>{a.context}</code>
                </Table.Td>
                <Table.Td>
                  <StateBadge state={a.lifecycleStatus} />
                </Table.Td>
                <Table.Td>{a.provider}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
        {apis.data?.list.length === 0 && <Text c="dimmed">No API matches.</Text>}
      </Loading>
      <Modal
        opened={creating !== null}
        onClose={() => setCreating(null)}
        title={creating ? TITLES[creating] : ''}
        size="lg"
      >
        {creating && <CreateApi kind={creating} />}
      </Modal>
    </Stack>
  );
}

type CreateKind = 'scratch' | 'openapi' | 'wsdl' | 'graphql';

const TITLES: Record<CreateKind, string> = {
  scratch: 'Create an API',
  openapi: 'Import an OpenAPI document',
  wsdl: 'Import a WSDL (SOAP)',
  graphql: 'Import a GraphQL schema',
};

const FILES: Record<Exclude<CreateKind, 'scratch'>, { label: string; description: string; accept: string }> = {
  openapi: {
    label: 'OpenAPI document',
    description: "OpenAPI 3 (JSON or YAML); its title, description and paths become the API's",
    accept: '.json,.yaml,.yml,application/json,application/yaml,text/yaml',
  },
  wsdl: {
    label: 'WSDL file',
    description: 'WSDL 1.1 (.wsdl/.xml), or a .zip holding it with the XSDs it imports',
    accept: '.wsdl,.xml,.zip,application/xml,application/zip',
  },
  graphql: {
    label: 'GraphQL schema',
    description: 'SDL (.graphql); the root fields of Query, Mutation and Subscription become operations',
    accept: '.graphql,.graphqls,.gql,.txt',
  },
};

function base64(buf: ArrayBuffer): string {
  let s = '';
  const bytes = new Uint8Array(buf);
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

/** An OpenAPI file as the API: JSON goes as a document, anything else as text the
 * control plane reads as YAML (or JSON), so its errors name the line. */
async function importFile(file: File | null, props: Record<string, unknown>): Promise<Api> {
  if (!file) throw new Error('Choose an OpenAPI file (JSON or YAML).');
  const text = await file.text();
  let definition: unknown = text;
  try {
    definition = JSON.parse(text);
  } catch {
    // YAML: sent as text.
  }
  return publisher.importOpenApi(definition, props);
}

function CreateApi({ kind }: { kind: CreateKind }) {
  const fromFile = kind !== 'scratch';
  const [soapType, setSoapType] = useState<'SOAP' | 'SOAP_TO_REST'>('SOAP');
  const [file, setFile] = useState<File | null>(null);
  // An OpenAPI document comes from a file or from a URL the control plane fetches.
  const [from, setFrom] = useState<'file' | 'url'>('file');
  const [url, setUrl] = useState('');
  const [name, setName] = useState('');
  const [context, setContext] = useState('');
  const [version, setVersion] = useState('v1');
  const [endpoint, setEndpoint] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async () => {
    setBusy(true);
    setError(null);
    try {
      const props: Record<string, unknown> = { context, version };
      if (name) props.name = name;
      if (endpoint) props.endpoints = [endpoint];
      let api: Api;
      if (kind === 'wsdl' || kind === 'graphql') {
        if (!file) throw new Error(`Choose a ${FILES[kind].label}.`);
        if (kind === 'graphql') {
          api = await publisher.importGraphql(await file.text(), props);
        } else {
          const zip = file.name.toLowerCase().endsWith('.zip');
          const source = zip ? { zip: base64(await file.arrayBuffer()) } : { wsdl: await file.text() };
          api = await publisher.importWsdl(source, soapType, props);
        }
      } else if (fromFile) {
        api = from === 'url' ? await publisher.importOpenApiUrl(url, props) : await importFile(file, props);
      } else {
        api = await publisher.create({ name, context, version, ...(endpoint ? { endpoints: [endpoint] } : {}) });
      }
      navigate(`/publisher/apis/${api.id}`);
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        void submit();
      }}
    >
      <Stack>
        {kind === 'openapi' && (
          <SegmentedControl
            aria-label="Import from"
            value={from}
            onChange={(v) => setFrom(v as 'file' | 'url')}
            data={[
              { value: 'file', label: 'A file' },
              { value: 'url', label: 'A URL' },
            ]}
          />
        )}
        {kind === 'openapi' && from === 'url' && (
          <TextInput
            label="Document URL"
            description="http or https; the control plane fetches it (JSON or YAML)"
            placeholder="https://example.com/openapi.yaml"
            value={url}
            onChange={(e) => setUrl(e.currentTarget.value)}
            required
          />
        )}
        {kind !== 'scratch' && !(kind === 'openapi' && from === 'url') && (
          <FileInput
            label={FILES[kind].label}
            description={FILES[kind].description}
            placeholder="Choose a file"
            accept={FILES[kind].accept}
            value={file}
            onChange={setFile}
            required
          />
        )}
        {kind === 'wsdl' && (
          <SegmentedControl
            aria-label="SOAP API type"
            value={soapType}
            onChange={setSoapType}
            data={[
              { value: 'SOAP', label: 'SOAP pass-through' },
              { value: 'SOAP_TO_REST', label: 'Generate a REST API (SOAP to REST)' },
            ]}
          />
        )}
        <TextInput
          label="Name"
          description={fromFile ? "Optional: default is the document's title or service name" : undefined}
          value={name}
          onChange={(e) => setName(e.currentTarget.value)}
          required={!fromFile}
        />
        <Group grow>
          <TextInput
            label="Context"
            placeholder="/pets"
            value={context}
            onChange={(e) => setContext(e.currentTarget.value)}
            required
          />
          <TextInput label="Version" value={version} onChange={(e) => setVersion(e.currentTarget.value)} required />
        </Group>
        <TextInput
          label="Back-end endpoint"
          placeholder="http://backend.internal:8080"
          value={endpoint}
          onChange={(e) => setEndpoint(e.currentTarget.value)}
        />
        <ErrorNote error={error} />
        <Group justify="flex-end">
          <Button type="submit" loading={busy}>
            {fromFile ? 'Import' : 'Create'}
          </Button>
        </Group>
      </Stack>
    </form>
  );
}

function ApiDetail({ id, user }: { id: string; user: User }) {
  const api = useLoad(() => publisher.api(id), [id]);
  const canEdit = user.scopes.includes('apim:api_create');
  return (
    <Loading error={api.error} loading={api.loading && !api.data}>
      {api.data && (
        <Stack>
          <Group justify="space-between">
            <div>
              <Anchor component={Link} href="/publisher" size="sm">
                ← APIs
              </Anchor>
              <Title order={2}>
                {api.data.name} <Text span c="dimmed">{api.data.version}</Text>
              </Title>
              <Text c="dimmed">
                <code>{api.data.context}</code> · {api.data.provider}
              </Text>
            </div>
            <Group>
              {canEdit && <NewVersion api={api.data} />}
              {canEdit && <DeleteApi api={api.data} />}
              <StateBadge state={api.data.lifecycleStatus} />
            </Group>
          </Group>
          <Tabs defaultValue="overview" keepMounted={false}>
            <Tabs.List>
              <Tabs.Tab value="overview">Overview</Tabs.Tab>
              <Tabs.Tab value="resources">Resources</Tabs.Tab>
              <Tabs.Tab value="security">Security</Tabs.Tab>
              <Tabs.Tab value="cors">CORS</Tabs.Tab>
              <Tabs.Tab value="transformations">Transformations</Tabs.Tab>
              <Tabs.Tab value="requests">Request handling</Tabs.Tab>
              <Tabs.Tab value="resilience">Resilience</Tabs.Tab>
              <Tabs.Tab value="cache">Cache</Tabs.Tab>
              <Tabs.Tab value="mcp">MCP server</Tabs.Tab>
              <Tabs.Tab value="lifecycle">Lifecycle</Tabs.Tab>
              <Tabs.Tab value="subscriptions">Subscriptions</Tabs.Tab>
              <Tabs.Tab value="documents">Documents</Tabs.Tab>
              <Tabs.Tab value="analytics">Analytics</Tabs.Tab>
            </Tabs.List>
            <Tabs.Panel value="overview" pt="md">
              <EditApi api={api.data} onSaved={api.reload} canEdit={canEdit} />
            </Tabs.Panel>
            <Tabs.Panel value="resources" pt="md">
              <ResourcesEditor api={api.data} onSaved={api.reload} canEdit={canEdit} />
            </Tabs.Panel>
            <Tabs.Panel value="security" pt="md">
              <SecurityEditor api={api.data} canEdit={canEdit} />
            </Tabs.Panel>
            <Tabs.Panel value="cors" pt="md">
              <CorsEditor api={api.data} onSaved={api.reload} canEdit={canEdit} />
            </Tabs.Panel>
            <Tabs.Panel value="transformations" pt="md">
              <TransformationsEditor api={api.data} onSaved={api.reload} canEdit={canEdit} />
            </Tabs.Panel>
            <Tabs.Panel value="requests" pt="md">
              <RequestHandlingEditor api={api.data} onSaved={api.reload} canEdit={canEdit} />
            </Tabs.Panel>
            <Tabs.Panel value="resilience" pt="md">
              <ResilienceEditor api={api.data} onSaved={api.reload} canEdit={canEdit} />
            </Tabs.Panel>
            <Tabs.Panel value="cache" pt="md">
              <CacheEditor api={api.data} onSaved={api.reload} canEdit={canEdit} />
            </Tabs.Panel>
            <Tabs.Panel value="mcp" pt="md">
              <McpEditor api={api.data} onSaved={api.reload} canEdit={canEdit} />
            </Tabs.Panel>
            <Tabs.Panel value="lifecycle" pt="md">
              <Lifecycle id={id} onChanged={api.reload} canPublish={user.scopes.includes('apim:api_publish')} />
            </Tabs.Panel>
            <Tabs.Panel value="analytics" pt="md">
              <LazyDashboards scope={{ kind: 'api', apiId: id }} title="Analytics" />
            </Tabs.Panel>
            <Tabs.Panel value="documents" pt="md">
              <DocumentsEditor apiId={id} canEdit={canEdit} />
            </Tabs.Panel>
            <Tabs.Panel value="subscriptions" pt="md">
              <Subscriptions apiId={id} canBlock={user.scopes.includes('apim:subscription_block')} />
            </Tabs.Panel>
          </Tabs>
        </Stack>
      )}
    </Loading>
  );
}

/** "New version": copies the API as `context/newVersion`, then opens the copy. */
function NewVersion({ api }: { api: Api }) {
  const [open, setOpen] = useState(false);
  const [version, setVersion] = useState('');
  const [makeDefault, setMakeDefault] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const create = async () => {
    setError(null);
    try {
      const copy = await publisher.newVersion(api.id, version, makeDefault);
      setOpen(false);
      navigate(`/publisher/apis/${copy.id}`);
    } catch (e) {
      setError(errorText(e));
    }
  };
  return (
    <>
      <Button variant="default" onClick={() => setOpen(true)}>
        New version
      </Button>
      <Modal opened={open} onClose={() => setOpen(false)} title={`New version of ${api.name}`}>
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void create();
          }}
        >
          <Stack>
            <TextInput label="Version" placeholder="v2" value={version} onChange={(e) => setVersion(e.currentTarget.value)} required />
            <Switch label="Make it the default version" checked={makeDefault} onChange={(e) => setMakeDefault(e.currentTarget.checked)} />
            <ErrorNote error={error} />
            <Group justify="flex-end">
              <Button type="submit">Create version</Button>
            </Group>
          </Stack>
        </form>
      </Modal>
    </>
  );
}

/** The non-empty lines of a one-URL-a-line text area. */
/** The endpoints of `urls`, each with the weight and timeouts it had in `before`. */
const kept = (urls: string[], before: Endpoint[]): Endpoint[] => urls.map((u) => before.find((e) => endpointUrl(e) === u) ?? u);

const lines = (text: string) =>
  text
    .split('\n')
    .map((s) => s.trim())
    .filter(Boolean);

function EditApi({ api, onSaved, canEdit }: { api: Api; onSaved: () => void; canEdit: boolean }) {
  const [name, setName] = useState(api.name);
  const [description, setDescription] = useState(api.description);
  const [endpoints, setEndpoints] = useState(api.endpoints.map(endpointUrl).join('\n'));
  const [sandbox, setSandbox] = useState((api.sandboxEndpoints ?? []).map(endpointUrl).join('\n'));
  const [tiers, setTiers] = useState<string[]>(api.policies);
  const defined = useLoad(() => publisher.tiers('subscription'), []);
  // The tiers the Admin defined, and any the API names that no longer exist (shown, so
  // saving does not drop them silently).
  const tierChoices = [...new Set([...(defined.data?.list.map((t) => t.name) ?? []), ...api.policies])];
  const [error, setError] = useState<string | null>(null);
  const [saved, setSaved] = useState(false);
  const save = async () => {
    setError(null);
    setSaved(false);
    try {
      await publisher.update(api.id, {
        name,
        context: api.context,
        version: api.version,
        isDefaultVersion: api.isDefaultVersion,
        type: api.type,
        description,
        // An endpoint kept keeps its weight and timeouts (the Resilience tab's).
        endpoints: kept(lines(endpoints), api.endpoints),
        sandboxEndpoints: kept(lines(sandbox), api.sandboxEndpoints ?? []),
        resources: api.resources,
        policies: tiers,
      });
      setSaved(true);
      onSaved();
    } catch (e) {
      setError(errorText(e));
    }
  };
  return (
    <Card withBorder maw={720}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void save();
        }}
      >
        <Stack>
          <TextInput label="Name" value={name} onChange={(e) => setName(e.currentTarget.value)} disabled={!canEdit} />
          <Textarea
            label="Description"
            autosize
            minRows={2}
            value={description}
            onChange={(e) => setDescription(e.currentTarget.value)}
            disabled={!canEdit}
          />
          <Textarea
            label="Back-end endpoints"
            description="One URL a line"
            autosize
            value={endpoints}
            onChange={(e) => setEndpoints(e.currentTarget.value)}
            disabled={!canEdit}
          />
          <Textarea
            label="Sandbox endpoints"
            description="One URL a line: calls with sandbox keys go here; with none they are refused (403 sandbox_not_configured)"
            autosize
            value={sandbox}
            onChange={(e) => setSandbox(e.currentTarget.value)}
            disabled={!canEdit}
          />
          <MultiSelect
            label="Subscription tiers"
            description="The tiers subscribers may choose (the Admin defines them)"
            data={tierChoices}
            value={tiers}
            onChange={setTiers}
            searchable
            disabled={!canEdit}
          />
          <ErrorNote error={defined.error && `Tiers: ${defined.error}`} />
          <Text size="sm" c="dimmed">
            Resources: {api.resources.map((r) => `${r.methods.join('|')} ${r.path}`).join(', ') || '/* (all)'}
          </Text>
          <ErrorNote error={error} />
          {saved && <Text c="green">Saved.</Text>}
          {canEdit && (
            <Group justify="flex-end">
              <Button type="submit">Save</Button>
            </Group>
          )}
        </Stack>
      </form>
    </Card>
  );
}

function Subscriptions({ apiId, canBlock }: { apiId: string; canBlock: boolean }) {
  const subs = useLoad(() => publisher.subscriptions(apiId), [apiId]);
  const [error, setError] = useState<string | null>(null);
  const toggle = async (id: string, blocked: boolean) => {
    setError(null);
    try {
      if (blocked) await publisher.unblock(id);
      else await publisher.block(id);
      subs.reload();
    } catch (e) {
      setError(errorText(e));
    }
  };
  return (
    <Loading error={subs.error} loading={subs.loading && !subs.data}>
      <ErrorNote error={error} />
      <Table aria-label="Subscriptions">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Application</Table.Th>
            <Table.Th>Tier</Table.Th>
            <Table.Th>State</Table.Th>
            <Table.Th />
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {subs.data?.list.map((s) => {
            const blocked = s.status === 'BLOCKED' || s.status === 'PROD_ONLY_BLOCKED';
            return (
              <Table.Tr key={s.id}>
                <Table.Td>{s.applicationName ?? s.applicationId}</Table.Td>
                <Table.Td>{s.throttlingPolicy}</Table.Td>
                <Table.Td>
                  <StateBadge state={s.status} />
                </Table.Td>
                <Table.Td>
                  {canBlock && (
                    <Button size="xs" color={blocked ? 'green' : 'red'} variant="light" onClick={() => void toggle(s.id, blocked)}>
                      {blocked ? 'Unblock' : 'Block'}
                    </Button>
                  )}
                </Table.Td>
              </Table.Tr>
            );
          })}
        </Table.Tbody>
      </Table>
      {subs.data?.list.length === 0 && <Text c="dimmed">No subscription yet.</Text>}
    </Loading>
  );
}
