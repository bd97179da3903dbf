// The AI (LLM) APIs' part of the analytics dashboards: tokens, cost and time to first
// token, in total and by model, application and API (the analytics API's `ai` report;
// cost from the Admin price table). Drawn only when the window has AI calls.
import { Card, SimpleGrid, Table, Text, Title } from '@mantine/core';
import type { AiBy, AiRow } from '../api/analytics';
import { duration } from '../lib/units';

export interface AiReports {
  totals: AiRow;
  unpricedModels: string[];
  by: (readonly [AiBy, AiRow[]])[];
}

const usd = (n: number) => `$${n < 1 ? n.toFixed(4) : n.toFixed(2)}`;

const label = (by: AiBy, r: AiRow) =>
  by === 'model'
    ? `${r.model}${r.provider ? ` (${r.provider})` : ''}`
    : by === 'application'
      ? r.applicationName || r.applicationId || '(no application)'
      : `${r.apiName} ${r.apiVersion}`;

export default function AiUsage({ ai }: { ai: AiReports }) {
  const t = ai.totals;
  return (
    <Card withBorder component="section" aria-label="AI usage">
      <Title order={4} mb="sm">
        AI usage: tokens, cost and time to first token
      </Title>
      <SimpleGrid cols={{ base: 2, md: 4 }} mb="sm">
        <Text data-testid="ai-tokens">{t.totalTokens.toLocaleString()} tokens</Text>
        <Text>
          {t.promptTokens.toLocaleString()} in · {t.completionTokens.toLocaleString()} out · {t.cachedTokens.toLocaleString()} cached
        </Text>
        <Text data-testid="ai-cost">{usd(t.costUsd)}</Text>
        <Text>
          TTFT p50 {duration(t.timeToFirstToken.p50Us)} · p99 {duration(t.timeToFirstToken.p99Us)}
        </Text>
      </SimpleGrid>
      {ai.by.map(([by, rows]) => (
        <Table fz="sm" key={by} aria-label={`AI usage by ${by}`} mb="sm">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>{by}</Table.Th>
              <Table.Th ta="right">calls</Table.Th>
              <Table.Th ta="right">tokens in</Table.Th>
              <Table.Th ta="right">tokens out</Table.Th>
              <Table.Th ta="right">cost</Table.Th>
              <Table.Th ta="right">TTFT p50</Table.Th>
              <Table.Th ta="right">TTFT p99</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {rows.map((r, i) => (
              <Table.Tr key={i}>
                <Table.Td>{label(by, r)}</Table.Td>
                <Table.Td ta="right">{r.requests.toLocaleString()}</Table.Td>
                <Table.Td ta="right">{r.promptTokens.toLocaleString()}</Table.Td>
                <Table.Td ta="right">{r.completionTokens.toLocaleString()}</Table.Td>
                <Table.Td ta="right">{usd(r.costUsd)}</Table.Td>
                <Table.Td ta="right">{duration(r.timeToFirstToken.p50Us)}</Table.Td>
                <Table.Td ta="right">{duration(r.timeToFirstToken.p99Us)}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      ))}
      {ai.unpricedModels.length > 0 && (
        <Text size="xs" c="dimmed">
          No price for {ai.unpricedModels.join(', ')} (counted at $0; set one with PUT /api/am/admin/v1/ai-prices/MODEL).
        </Text>
      )}
    </Card>
  );
}
