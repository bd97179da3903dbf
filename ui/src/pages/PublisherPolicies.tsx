// The Publisher's editors for what an API does at the gateway beyond its endpoints:
// its resources (path, methods, scopes), the credentials it accepts, CORS, and request/response transformations
// (the `mediation` section: jq programs, header/query/path rewrites, JSON<->XML), with a
// dry run on a sample before saving. Each saves with a JSON Merge Patch of its field only;
// the control plane checks it by compiling the API and names every bad field.
import { useState } from 'react';
import {
  Button,
  Card,
  Checkbox,
  Code,
  Group,
  Stack,
  Switch,
  Table,
  Text,
  TextInput,
  Textarea,
} from '@mantine/core';
import { publisher, type ApiSecurity } from '../api/calls';
import type { Api, Mediation } from '../api/types';
import { errorText, useLoad } from '../lib/load';
import { ErrorNote, Loading } from './common';

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'];

type Resource = Api['resources'][number];

const list = (s: string) => s.split(',').map((x) => x.trim()).filter(Boolean);

/** Save state shared by the editors: error text and a "Saved." note. */
export function useSave(id: string, onSaved: () => void) {
  const [error, setError] = useState<string | null>(null);
  const [saved, setSaved] = useState(false);
  const save = async (patch: Record<string, unknown>) => {
    setError(null);
    setSaved(false);
    try {
      await publisher.patch(id, patch);
      setSaved(true);
      onSaved();
    } catch (e) {
      setError(errorText(e));
    }
  };
  const note = (
    <>
      <ErrorNote error={error} />
      {saved && <Text c="green">Saved.</Text>}
    </>
  );
  return { save, note };
}

export function ResourcesEditor({ api, onSaved, canEdit }: { api: Api; onSaved: () => void; canEdit: boolean }) {
  const [rows, setRows] = useState<Resource[]>(api.resources.map((r) => ({ ...r, scopes: r.scopes ?? [] })));
  const { save, note } = useSave(api.id, onSaved);
  const set = (i: number, r: Partial<Resource>) => setRows(rows.map((x, j) => (j === i ? { ...x, ...r } : x)));
  return (
    <Card withBorder>
      <Stack>
        <Table aria-label="Resources">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Path</Table.Th>
              <Table.Th>Methods</Table.Th>
              <Table.Th>Scopes</Table.Th>
              <Table.Th />
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {rows.map((r, i) => (
              <Table.Tr key={i}>
                <Table.Td>
                  <TextInput aria-label={`Path of resource ${i + 1}`} value={r.path} onChange={(e) => set(i, { path: e.currentTarget.value })} disabled={!canEdit} />
                </Table.Td>
                <Table.Td>
                  <Checkbox.Group value={r.methods} onChange={(m) => set(i, { methods: m })} aria-label={`Methods of resource ${i + 1}`}>
                    <Group gap={6}>
                      {METHODS.map((m) => (
                        <Checkbox key={m} value={m} label={m} size="xs" disabled={!canEdit} />
                      ))}
                    </Group>
                  </Checkbox.Group>
                </Table.Td>
                <Table.Td>
                  <TextInput
                    aria-label={`Scopes of resource ${i + 1}`}
                    placeholder="none"
                    value={(r.scopes ?? []).join(', ')}
                    onChange={(e) => set(i, { scopes: list(e.currentTarget.value) })}
                    disabled={!canEdit}
                  />
                </Table.Td>
                <Table.Td>
                  {canEdit && (
                    <Button size="xs" variant="subtle" color="red" onClick={() => setRows(rows.filter((_, j) => j !== i))} aria-label={`Remove resource ${i + 1}`}>
                      Remove
                    </Button>
                  )}
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
        {rows.length === 0 && <Text c="dimmed">No resource: every path and method is proxied.</Text>}
        {note}
        {canEdit && (
          <Group justify="space-between">
            <Button variant="default" onClick={() => setRows([...rows, { path: '/', methods: ['GET'], scopes: [] }])}>
              Add resource
            </Button>
            <Button onClick={() => void save({ resources: rows })}>Save resources</Button>
          </Group>
        )}
      </Stack>
    </Card>
  );
}

export function SecurityEditor({ api, canEdit }: { api: Api; canEdit: boolean }) {
  const current = useLoad(() => publisher.security(api.id), [api.id]);
  return (
    <Loading error={current.error} loading={!current.data}>
      {current.data && <SecurityForm id={api.id} start={current.data} canEdit={canEdit} onSaved={current.reload} />}
    </Loading>
  );
}

function SecurityForm({ id, start, canEdit, onSaved }: { id: string; start: ApiSecurity; canEdit: boolean; onSaved: () => void }) {
  const [sec, setSec] = useState<ApiSecurity>(start);
  const [error, setError] = useState<string | null>(null);
  const [saved, setSaved] = useState(false);
  const flag = (k: 'oauth2' | 'api_key' | 'basic' | 'subscription', label: string, description: string) => (
    <Switch label={label} description={description} checked={sec[k]} onChange={(e) => setSec({ ...sec, [k]: e.currentTarget.checked })} disabled={!canEdit} />
  );
  const save = async () => {
    setError(null);
    setSaved(false);
    try {
      const body = { ...sec };
      if (!body.api_key_header) delete body.api_key_header;
      if (!body.api_key_query) delete body.api_key_query;
      await publisher.setSecurity(id, body);
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
          {flag('oauth2', 'OAuth2 / JWT', 'Bearer tokens from the key manager or a trusted issuer')}
          {flag('api_key', 'API keys', "Keys created in the Developer Portal for a subscribed application")}
          {sec.api_key && (
            <Group grow>
              <TextInput label="API key header" placeholder="apikey" value={sec.api_key_header ?? ''} onChange={(e) => setSec({ ...sec, api_key_header: e.currentTarget.value })} disabled={!canEdit} />
              <TextInput label="API key query parameter" placeholder="none" value={sec.api_key_query ?? ''} onChange={(e) => setSec({ ...sec, api_key_query: e.currentTarget.value })} disabled={!canEdit} />
            </Group>
          )}
          {flag('basic', 'HTTP Basic', "The application's consumer key and secret")}
          {flag('subscription', 'Subscription required', "The caller's application must be subscribed to this API")}
          <ErrorNote error={error} />
          {saved && <Text c="green">Saved.</Text>}
          {canEdit && (
            <Group justify="flex-end">
              <Button type="submit">Save security</Button>
            </Group>
          )}
        </Stack>
      </form>
    </Card>
  );
}

interface Cors {
  corsConfigurationEnabled?: boolean;
  accessControlAllowOrigins?: string[];
  accessControlAllowMethods?: string[];
  accessControlAllowHeaders?: string[];
  accessControlExposeHeaders?: string[];
  accessControlAllowCredentials?: boolean;
  accessControlMaxAge?: number | string;
}

export function CorsEditor({ api, onSaved, canEdit }: { api: Api; onSaved: () => void; canEdit: boolean }) {
  const start = (api as Api & { corsConfiguration?: Cors }).corsConfiguration ?? {};
  const [enabled, setEnabled] = useState(start.corsConfigurationEnabled ?? false);
  const [origins, setOrigins] = useState((start.accessControlAllowOrigins ?? []).join(', '));
  const [methods, setMethods] = useState((start.accessControlAllowMethods ?? ['GET', 'POST', 'PUT', 'DELETE']).join(', '));
  const [headers, setHeaders] = useState((start.accessControlAllowHeaders ?? ['Authorization', 'Content-Type']).join(', '));
  const [expose, setExpose] = useState((start.accessControlExposeHeaders ?? []).join(', '));
  const [credentials, setCredentials] = useState(start.accessControlAllowCredentials ?? false);
  const [maxAge, setMaxAge] = useState(String(start.accessControlMaxAge ?? ''));
  const { save, note } = useSave(api.id, onSaved);
  const submit = () => {
    const cors: Cors = {
      corsConfigurationEnabled: enabled,
      accessControlAllowOrigins: list(origins),
      accessControlAllowMethods: list(methods),
      accessControlAllowHeaders: list(headers),
      accessControlExposeHeaders: list(expose),
      accessControlAllowCredentials: credentials,
    };
    if (maxAge.trim()) cors.accessControlMaxAge = /^\d+$/.test(maxAge.trim()) ? Number(maxAge.trim()) : maxAge.trim();
    void save({ corsConfiguration: cors });
  };
  return (
    <Card withBorder maw={720}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          submit();
        }}
      >
        <Stack>
          <Switch label="CORS" description="The gateway answers preflights and adds the CORS headers" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} disabled={!canEdit} />
          <TextInput label="Allowed origins" description="Comma-separated, e.g. https://app.example.com, or *" value={origins} onChange={(e) => setOrigins(e.currentTarget.value)} disabled={!canEdit} />
          <TextInput label="Allowed methods" value={methods} onChange={(e) => setMethods(e.currentTarget.value)} disabled={!canEdit} />
          <TextInput label="Allowed headers" value={headers} onChange={(e) => setHeaders(e.currentTarget.value)} disabled={!canEdit} />
          <TextInput label="Exposed headers" value={expose} onChange={(e) => setExpose(e.currentTarget.value)} disabled={!canEdit} />
          <Switch label="Allow credentials" checked={credentials} onChange={(e) => setCredentials(e.currentTarget.checked)} disabled={!canEdit} />
          <TextInput label="Max age" description="Seconds, or a duration such as 10m" value={maxAge} onChange={(e) => setMaxAge(e.currentTarget.value)} disabled={!canEdit} />
          {note}
          {canEdit && (
            <Group justify="flex-end">
              <Button type="submit">Save CORS</Button>
            </Group>
          )}
        </Stack>
      </form>
    </Card>
  );
}

const EXAMPLE = `{
  "request": {
    "headers": { "set": { "X-Source": "turnpike" } },
    "body": { "jq": "{order: ., received: true}" }
  }
}`;

export function TransformationsEditor({ api, onSaved, canEdit }: { api: Api; onSaved: () => void; canEdit: boolean }) {
  const current = (api as Api & { mediation?: unknown }).mediation;
  const [text, setText] = useState(current ? JSON.stringify(current, null, 2) : '');
  const [sample, setSample] = useState('{"id": 7, "items": [1]}');
  const [result, setResult] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const { save, note } = useSave(api.id, onSaved);
  // null (an empty editor) clears the API's transformation when saved.
  const parsed = (): Mediation | null => {
    if (!text.trim()) return null;
    try {
      return JSON.parse(text);
    } catch (e) {
      throw new Error(`The transformation is not JSON: ${errorText(e)}`);
    }
  };
  const dryRun = async () => {
    setError(null);
    setResult(null);
    try {
      let body: unknown = sample;
      try {
        body = JSON.parse(sample);
      } catch {
        /* a non-JSON sample is sent as text */
      }
      const out = await publisher.tryMediation(api.id, { mediation: parsed() ?? undefined, method: 'POST', path: '/', body });
      setResult(JSON.stringify(out, null, 2));
    } catch (e) {
      setError(errorText(e));
    }
  };
  const submit = () => {
    setError(null);
    try {
      void save({ mediation: parsed() });
    } catch (e) {
      setError(errorText(e));
    }
  };
  return (
    <Card withBorder maw={900}>
      <Stack>
        <Text size="sm">
          The API's <Code>mediation</Code> section (JSON): header, query and path rewrites, <Code>jq</Code> programs on
          JSON bodies, JSON↔XML. Empty means none. Example:
        </Text>
        <Code block>{EXAMPLE}</Code>
        <Textarea label="Transformation" autosize minRows={6} value={text} onChange={(e) => setText(e.currentTarget.value)} disabled={!canEdit} styles={{ input: { fontFamily: 'monospace' } }} />
        <Textarea label="Sample request body" autosize minRows={2} value={sample} onChange={(e) => setSample(e.currentTarget.value)} styles={{ input: { fontFamily: 'monospace' } }} />
        <ErrorNote error={error} />
        {result && (
          <div>
            <Text fw={600} size="sm">
              Result of the dry run
            </Text>
            <Code block data-testid="mediation-result">
              {result}
            </Code>
          </div>
        )}
        {note}
        <Group justify="flex-end">
          <Button variant="default" onClick={() => void dryRun()}>
            Try on the sample
          </Button>
          {canEdit && <Button onClick={submit}>Save transformation</Button>}
        </Group>
      </Stack>
    </Card>
  );
}
