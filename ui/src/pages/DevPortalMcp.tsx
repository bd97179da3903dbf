// The Developer Portal's MCP servers (docs/portals.md): the visible APIs a publisher
// exposed to AI agents, each with its endpoint URL, its tools, copy-paste configurations
// for the common agent clients (lib/mcpClients.ts) and a try-it that calls a tool with one
// of the developer's applications' keys, through the control plane's relay, and shows the
// JSON-RPC exchange (lib/mcpTry.ts).
import { useState } from 'react';
import { Badge, Button, Card, Code, CopyButton, Group, Select, Stack, Table, Tabs, Text, TextInput, Textarea, Title } from '@mantine/core';
import { devportal } from '../api/calls';
import type { KeyType, McpServer, McpTool } from '../api/types';
import { errorText, useLoad } from '../lib/load';
import { argumentsSkeleton, clientConfigs } from '../lib/mcpClients';
import { callTool, type McpCallOutcome } from '../lib/mcpTry';
import { ErrorNote, Loading, StateBadge } from './common';

/** The server's URL agents use: the first environment's, https first. */
export function serverUrl(s: McpServer): string {
  const u = s.endpointURLs[0]?.URLs;
  return u?.https ?? u?.http ?? s.endpoint;
}

export function McpServers() {
  const [search, setSearch] = useState('');
  const servers = useLoad(() => devportal.mcpServers(search), [search]);
  return (
    <Stack>
      <Title order={2}>MCP servers</Title>
      <Text c="dimmed">APIs that AI agents can use as Model Context Protocol servers: each operation a tool, each call through the API with your application&apos;s key.</Text>
      <TextInput label="Search" placeholder="name or description" value={search} onChange={(e) => setSearch(e.currentTarget.value)} />
      <Loading error={servers.error} loading={servers.loading && !servers.data}>
        {servers.data?.list.length === 0 && <Text>No MCP servers yet.</Text>}
        {servers.data?.list.map((s) => <Server key={s.apiId} server={s} />)}
      </Loading>
    </Stack>
  );
}

function Server({ server }: { server: McpServer }) {
  const url = serverUrl(server);
  return (
    <Card withBorder component="section" aria-label={`MCP server ${server.name}`}>
      <Stack>
        <Group justify="space-between">
          <Title order={3}>
            {server.name} <Text span c="dimmed">{server.version}</Text>
          </Title>
          {server.lifecycleStatus && <StateBadge state={server.lifecycleStatus} />}
        </Group>
        {server.description && <Text size="sm">{server.description}</Text>}
        <Group gap="xs">
          <Text size="sm">Endpoint (Streamable HTTP):</Text>
          <Code data-testid="mcp-url">{url}</Code>
          <Copy value={url} />
        </Group>
        <ToolList tools={server.tools} />
        <ClientConfigs name={server.name} url={url} />
        <TryTool server={server} />
      </Stack>
    </Card>
  );
}

function Copy({ value }: { value: string }) {
  return (
    <CopyButton value={value}>
      {({ copied, copy }) => (
        <Button size="compact-xs" variant="light" onClick={copy}>
          {copied ? 'Copied' : 'Copy'}
        </Button>
      )}
    </CopyButton>
  );
}

function ToolList({ tools }: { tools: McpTool[] }) {
  return (
    <Table aria-label="Tools" withTableBorder fz="sm">
      <Table.Thead>
        <Table.Tr>
          <Table.Th>Tool</Table.Th>
          <Table.Th>Description</Table.Th>
          <Table.Th>Arguments</Table.Th>
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {tools.map((t) => (
          <Table.Tr key={t.name}>
            <Table.Td>
              <Code>{t.name}</Code>
            </Table.Td>
            <Table.Td>{t.description}</Table.Td>
            <Table.Td>{Object.keys((t.inputSchema.properties ?? {}) as object).join(', ')}</Table.Td>
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}

function ClientConfigs({ name, url }: { name: string; url: string }) {
  const configs = clientConfigs(name, url);
  return (
    <Tabs defaultValue={configs[0].client} aria-label="Client configuration">
      <Tabs.List>
        {configs.map((c) => (
          <Tabs.Tab key={c.client} value={c.client}>
            {c.client}
          </Tabs.Tab>
        ))}
      </Tabs.List>
      {configs.map((c) => (
        <Tabs.Panel key={c.client} value={c.client} pt="xs">
          <Group justify="space-between">
            <Text size="sm" c="dimmed">
              {c.file}
            </Text>
            <Copy value={c.text} />
          </Group>
          <Code block data-testid={`config-${c.client}`}>
            {c.text}
          </Code>
        </Tabs.Panel>
      ))}
    </Tabs>
  );
}

function TryTool({ server }: { server: McpServer }) {
  const apps = useLoad(() => devportal.applications(), []);
  const [app, setApp] = useState<string | null>(null);
  const [keyType, setKeyType] = useState<KeyType>('PRODUCTION');
  const first = server.tools[0];
  const [tool, setTool] = useState<string | null>(first?.name ?? null);
  const skeleton = (t: McpTool | undefined) => JSON.stringify(argumentsSkeleton(t?.inputSchema), null, 2);
  const [args, setArgs] = useState(skeleton(first));
  const [outcome, setOutcome] = useState<McpCallOutcome | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const send = async () => {
    setBusy(true);
    setError(null);
    setOutcome(null);
    try {
      if (!app) throw new Error('Choose the application whose key to use.');
      if (!tool) throw new Error('Choose a tool.');
      const parsed: unknown = JSON.parse(args || '{}');
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('Arguments: a JSON object.');
      const relay = (req: Parameters<typeof devportal.tryIt>[1]) => devportal.tryIt(app, { ...req, keyType });
      setOutcome(await callTool(relay, server.endpoint, tool, parsed as Record<string, unknown>));
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <Card withBorder component="section" aria-label={`Try a tool of ${server.name}`}>
      <Title order={4} mb="xs">
        Try a tool
      </Title>
      <Stack>
        <Group grow align="flex-end">
          <Select label="Application" placeholder="Choose" data={(apps.data?.list ?? []).map((a) => ({ value: a.id, label: a.name }))} value={app} onChange={setApp} />
          <Select label="Key type" data={['PRODUCTION', 'SANDBOX']} value={keyType} onChange={(v) => setKeyType(v === 'SANDBOX' ? 'SANDBOX' : 'PRODUCTION')} allowDeselect={false} />
          <Select
            label="Tool"
            data={server.tools.map((t) => t.name)}
            value={tool}
            onChange={(v) => {
              setTool(v);
              setArgs(skeleton(server.tools.find((t) => t.name === v)));
            }}
          />
        </Group>
        <Textarea label="Arguments" description="A JSON object, as the tool's input schema describes" autosize minRows={2} value={args} onChange={(e) => setArgs(e.currentTarget.value)} />
        <Group>
          <Button onClick={() => void send()} loading={busy}>
            Call tool
          </Button>
        </Group>
        <ErrorNote error={error} />
        {outcome && <Outcome outcome={outcome} />}
      </Stack>
    </Card>
  );
}

function Outcome({ outcome }: { outcome: McpCallOutcome }) {
  return (
    <Stack gap="xs" role="region" aria-label="Tool result">
      <Group gap="xs">
        {outcome.steps.map((s, i) => (
          <Badge key={i} color={s.status < 300 ? 'green' : 'red'} variant="light">
            {s.label}: {s.status}
          </Badge>
        ))}
      </Group>
      <Code block data-testid="mcp-answer">
        {JSON.stringify(outcome.answer ?? outcome.steps[outcome.steps.length - 1]?.body, null, 2)}
      </Code>
    </Stack>
  );
}
