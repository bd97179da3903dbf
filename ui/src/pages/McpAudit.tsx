// The Admin console's MCP audit trail: every audited tool call of every MCP server
// (an API whose `mcp:` section has `audit:`), newest first: when, which API and tool,
// which application and subject in which session, the arguments as the gateway kept
// them (secrets and the section's rules `[REDACTED]`, long ones cut), how it ended and
// how long it took. Filtered by API, tool, application and outcome, 50 a page.
import { useState } from 'react';
import { Badge, Code, Group, Select, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { admin, publisher, type McpAuditRecord } from '../api/calls';
import { duration } from '../lib/units';
import { useLoad } from '../lib/load';
import { Loading, Pager } from './common';

const PAGE = 50;
const OUTCOME_COLORS: Record<string, string> = { ok: 'green', tool_error: 'orange', refused: 'red' };

export function McpAudit() {
  const [apiId, setApiId] = useState<string | null>(null);
  const [tool, setTool] = useState('');
  const [applicationId, setApplicationId] = useState('');
  const [outcome, setOutcome] = useState<string | null>(null);
  const [offset, setOffset] = useState(0);
  const apis = useLoad(() => publisher.apis(''), []);
  const log = useLoad(
    () =>
      admin.mcpAudit({
        apiId: apiId ?? undefined,
        tool: tool || undefined,
        applicationId: applicationId || undefined,
        outcome: (outcome as McpAuditRecord['outcome'] | null) ?? undefined,
        limit: PAGE,
        offset,
      }),
    [apiId, tool, applicationId, outcome, offset],
  );
  const total = log.data?.pagination?.total ?? log.data?.count ?? 0;
  const reset = <T,>(set: (v: T) => void) => (v: T) => (set(v), setOffset(0));
  return (
    <Stack>
      <Title order={2}>MCP audit</Title>
      <Group>
        <Select
          label="API"
          clearable
          searchable
          value={apiId}
          onChange={reset(setApiId)}
          data={(apis.data?.list ?? []).map((a) => ({ value: a.id, label: `${a.name} ${a.version}` }))}
        />
        <TextInput label="Tool" value={tool} onChange={(e) => reset(setTool)(e.currentTarget.value)} />
        <TextInput label="Application id" value={applicationId} onChange={(e) => reset(setApplicationId)(e.currentTarget.value)} />
        <Select label="Outcome" clearable value={outcome} onChange={reset(setOutcome)} data={['ok', 'tool_error', 'refused']} />
      </Group>
      <Loading error={log.error} loading={log.loading && !log.data}>
        <Table aria-label="MCP audit" striped>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Time</Table.Th>
              <Table.Th>API</Table.Th>
              <Table.Th>Tool</Table.Th>
              <Table.Th>Application</Table.Th>
              <Table.Th>Subject</Table.Th>
              <Table.Th>Session</Table.Th>
              <Table.Th>Arguments</Table.Th>
              <Table.Th>Outcome</Table.Th>
              <Table.Th ta="right">Latency</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {log.data?.list.map((r) => (
              <Table.Tr key={`${r.requestId}-${r.timestamp}`}>
                <Table.Td>{new Date(r.timestamp).toLocaleString()}</Table.Td>
                <Table.Td>
                  {r.apiName} {r.apiVersion}
                </Table.Td>
                <Table.Td>{r.tool}</Table.Td>
                <Table.Td>{r.applicationName ?? r.applicationId ?? ''}</Table.Td>
                <Table.Td>{r.subject ?? ''}</Table.Td>
                <Table.Td title={r.sessionId ?? ''}>{r.sessionId ? `${r.sessionId.slice(0, 8)}…` : ''}</Table.Td>
                <Table.Td>
                  <Code data-testid="mcp-audit-arguments">{r.arguments}</Code>
                  {r.truncated && (
                    <Badge ml="xs" size="xs" color="gray">
                      truncated
                    </Badge>
                  )}
                </Table.Td>
                <Table.Td>
                  <Badge color={OUTCOME_COLORS[r.outcome] ?? 'gray'} variant="light">
                    {r.outcome}
                  </Badge>
                  {r.code && (
                    <Text span size="xs" ml="xs">
                      {r.code}
                    </Text>
                  )}
                </Table.Td>
                <Table.Td ta="right">{duration(r.latencyUs)}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
        {total === 0 && <Text c="dimmed">No tool call matches (an MCP server records its calls when its mcp section has audit).</Text>}
        <Pager offset={offset} page={PAGE} total={total} setOffset={setOffset} />
      </Loading>
    </Stack>
  );
}
