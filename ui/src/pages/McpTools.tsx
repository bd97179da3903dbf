// The MCP tools part of an API's dashboards: its MCP server's tool calls (a tool call's
// analytics name its resource by the tool) by tool and by tool and application: calls,
// refusals counted as errors, and latency p50 / p95 / p99 (the analytics API's
// `top?by=tool` and `top?by=tool_application`). Drawn only when the window has tool calls.
import { Card, Table, Text, Title } from '@mantine/core';
import type { TopRow } from '../api/analytics';
import { duration } from '../lib/units';

export interface McpToolReports {
  byTool: TopRow[];
  byApplication: TopRow[];
}

function Rows({ rows, application }: { rows: TopRow[]; application: boolean }) {
  return (
    <Table.Tbody>
      {rows.map((r, i) => (
        <Table.Tr key={i}>
          <Table.Td>{r.tool}</Table.Td>
          {application && <Table.Td>{r.applicationName || r.applicationId || '(no application)'}</Table.Td>}
          <Table.Td ta="right">{r.requests.toLocaleString()}</Table.Td>
          <Table.Td ta="right">{r.errors.toLocaleString()}</Table.Td>
          <Table.Td ta="right">{duration(r.latency?.total.p50Us)}</Table.Td>
          <Table.Td ta="right">{duration(r.latency?.total.p95Us)}</Table.Td>
          <Table.Td ta="right">{duration(r.latency?.total.p99Us)}</Table.Td>
        </Table.Tr>
      ))}
    </Table.Tbody>
  );
}

function Head({ application }: { application: boolean }) {
  return (
    <Table.Thead>
      <Table.Tr>
        <Table.Th>tool</Table.Th>
        {application && <Table.Th>application</Table.Th>}
        <Table.Th ta="right">calls</Table.Th>
        <Table.Th ta="right">errors</Table.Th>
        <Table.Th ta="right">p50</Table.Th>
        <Table.Th ta="right">p95</Table.Th>
        <Table.Th ta="right">p99</Table.Th>
      </Table.Tr>
    </Table.Thead>
  );
}

export default function McpTools({ tools }: { tools: McpToolReports }) {
  return (
    <Card withBorder component="section" aria-label="MCP tools">
      <Title order={4} mb="sm">
        MCP tools: calls, errors and latency
      </Title>
      <Table fz="sm" aria-label="MCP tools by tool" mb="sm">
        <Head application={false} />
        <Rows rows={tools.byTool} application={false} />
      </Table>
      <Table fz="sm" aria-label="MCP tools by application">
        <Head application />
        <Rows rows={tools.byApplication} application />
      </Table>
      <Text size="xs" c="dimmed">
        Errors are the gateway&apos;s refusals (401, 403, 429); a tool&apos;s own failures (isError) are in the MCP audit trail.
      </Text>
    </Card>
  );
}
