// The Publisher's editor for how the gateway spreads an API's calls over its endpoints and
// keeps away from failing ones (docs/resilience.md): each endpoint's weight and timeouts,
// the balancing, and the `resilience:` section (suspension, circuit breaker, retries,
// health check) as JSON in the declarative file's own shape. Saves with a JSON Merge Patch
// of `endpoints`, `loadBalancing` and `resilience`; the control plane checks them by
// compiling the API and names each bad field (`resilience.circuit_breaker.window`).
import { useState } from 'react';
import { Button, Card, Group, Select, Stack, Table, Text, TextInput, Textarea } from '@mantine/core';
import type { Api, Endpoint, EndpointDetail } from '../api/types';
import { quantity } from '../lib/units';
import { ErrorNote } from './common';
import { useSave } from './PublisherPolicies';

const BALANCING = ['round_robin', 'failover', 'weighted_round_robin', 'least_connections'] as const;

type WithResilience = Api & { loadBalancing?: string | null; resilience?: Record<string, unknown> | null };

interface Row {
  url: string;
  weight: string;
  connect: string;
  read: string;
}

const row = (e: Endpoint): Row => {
  const d: EndpointDetail = typeof e === 'string' ? { url: e } : e;
  return {
    url: d.url,
    weight: d.weight === undefined ? '' : String(d.weight),
    connect: String(d.timeouts?.connect ?? ''),
    read: String(d.timeouts?.read ?? ''),
  };
};


/** A row as sent: a plain URL when it has no settings (so it stays a string on the wire). */
const endpoint = (r: Row): Endpoint => {
  const d: EndpointDetail = { url: r.url };
  const w = r.weight.trim();
  // Text that is not a number is sent as typed: the control plane names the field.
  if (w) d.weight = /^\d+$/.test(w) ? Number(w) : (w as unknown as number);
  const connect = quantity(r.connect);
  const read = quantity(r.read);
  if (connect !== undefined || read !== undefined) d.timeouts = { connect, read };
  return d.weight === undefined && d.timeouts === undefined ? r.url : d;
};

export function ResilienceEditor({ api, onSaved, canEdit }: { api: Api; onSaved: () => void; canEdit: boolean }) {
  const start = api as WithResilience;
  const [rows, setRows] = useState<Row[]>(api.endpoints.map(row));
  const [balancing, setBalancing] = useState(start.loadBalancing ?? 'round_robin');
  const [section, setSection] = useState(start.resilience ? JSON.stringify(start.resilience, null, 2) : '');
  const [parseError, setParseError] = useState<string | null>(null);
  const { save, note } = useSave(api.id, onSaved);
  const set = (i: number, r: Partial<Row>) => setRows(rows.map((x, j) => (j === i ? { ...x, ...r } : x)));

  const submit = () => {
    setParseError(null);
    let resilience: unknown = null;
    if (section.trim()) {
      try {
        resilience = JSON.parse(section);
      } catch (e) {
        setParseError(`Resilience settings: not JSON (${String(e)})`);
        return;
      }
    }
    void save({ endpoints: rows.map(endpoint), loadBalancing: balancing, resilience });
  };

  return (
    <Card withBorder maw={900}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          submit();
        }}
      >
        <Stack>
          <Text fw={600}>Endpoints</Text>
          <Text size="sm" c="dimmed">
            Weights share calls under weighted round robin (0 is a standby); timeouts override the API's for one
            endpoint, e.g. <code>2s</code>. Add or remove endpoints on the Overview tab.
          </Text>
          <Table aria-label="Endpoint settings">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Endpoint</Table.Th>
                <Table.Th>Weight</Table.Th>
                <Table.Th>Connect timeout</Table.Th>
                <Table.Th>Read timeout</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {rows.map((r, i) => (
                <Table.Tr key={r.url}>
                  <Table.Td>
                    <code>{r.url}</code>
                  </Table.Td>
                  <Table.Td>
                    <TextInput aria-label={`Weight of ${r.url}`} value={r.weight} onChange={(e) => set(i, { weight: e.currentTarget.value })} disabled={!canEdit} w={90} />
                  </Table.Td>
                  <Table.Td>
                    <TextInput aria-label={`Connect timeout of ${r.url}`} value={r.connect} onChange={(e) => set(i, { connect: e.currentTarget.value })} disabled={!canEdit} w={110} />
                  </Table.Td>
                  <Table.Td>
                    <TextInput aria-label={`Read timeout of ${r.url}`} value={r.read} onChange={(e) => set(i, { read: e.currentTarget.value })} disabled={!canEdit} w={110} />
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
          <Select label="Load balancing" data={BALANCING} value={balancing} onChange={(v) => setBalancing(BALANCING.find((b) => b === v) ?? 'round_robin')} allowDeselect={false} disabled={!canEdit} />
          <Textarea
            label="Resilience settings"
            description={'JSON in the file\'s resilience: shape, e.g. {"suspension": {"on": ["connect_failure", "5xx"], "initial_duration": "30s"}, "health_check": {"path": "/health"}}; empty for none'}
            autosize
            minRows={6}
            value={section}
            onChange={(e) => setSection(e.currentTarget.value)}
            disabled={!canEdit}
            styles={{ input: { fontFamily: 'monospace' } }}
          />
          <ErrorNote error={parseError} />
          {note}
          {canEdit && (
            <Group justify="flex-end">
              <Button type="submit">Save resilience</Button>
            </Group>
          )}
        </Stack>
      </form>
    </Card>
  );
}
