// Analytics dashboards drawn from the control plane's analytics API (per-minute rollups
// with mergeable latency histograms): totals, traffic over time (requests, errors,
// throttled), latency percentiles split gateway vs back end, the busiest APIs /
// applications / resources, and the error and throttling breakdowns. One component for
// the three scopes: the whole platform (Admin), one API (Publisher), one application
// (Developer Portal); for AI APIs, tokens, cost and time to first token (`AiUsage.tsx`);
// for an MCP server, its tools' calls, errors and latency (`McpTools.tsx`).
// Loaded on demand: the charts library stays out of the other pages.
// Time axes come zero-filled from the API (a minute without traffic is a 0, not a
// missing point); lines are straight between points (no smoothing that would draw a gap
// as a ramp), latency gaps stay gaps, and latency is in µs when it is under 1 ms.
import '@mantine/charts/styles.css';
import { useState } from 'react';
import { AreaChart, LineChart } from '@mantine/charts';
import { Card, Group, SegmentedControl, SimpleGrid, Stack, Table, Text, Title } from '@mantine/core';
import { analytics, type AiBy, type AnalyticsScope, type LatencyBlock } from '../api/analytics';
import { useLoad } from '../lib/load';
import { duration, latencyScale, scaled } from '../lib/units';
import AiUsage, { type AiReports } from './AiUsage';
import McpTools, { type McpToolReports } from './McpTools';
import { Loading } from './common';

const WINDOWS = {
  hour: { label: 'Last hour', seconds: 3_600, interval: 60 },
  day: { label: '24 hours', seconds: 86_400, interval: 3_600 },
  week: { label: '7 days', seconds: 7 * 86_400, interval: 86_400 },
} as const;
type WindowName = keyof typeof WINDOWS;

const clock = (t: number, interval: number) =>
  interval >= 86_400 ? new Date(t * 1000).toLocaleDateString() : new Date(t * 1000).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });

export default function Dashboards({ scope, title }: { scope: AnalyticsScope; title: string }) {
  const [name, setName] = useState<WindowName>('hour');
  const w = WINDOWS[name];
  const [to] = useState(() => Math.floor(Date.now() / 1000) + 1);
  const window = { from: to - w.seconds, to, interval: w.interval };
  const key = JSON.stringify([scope, window]);
  const data = useLoad(
    async () => {
      const [summary, traffic, latency, errors, throttled] = await Promise.all([
        analytics.summary(scope, window),
        analytics.traffic(scope, window),
        analytics.latency(scope, window),
        analytics.errors(scope, window),
        analytics.throttled(scope, window),
      ]);
      const tops = await Promise.all(
        (scope.kind === 'admin' ? (['api', 'application'] as const) : scope.kind === 'api' ? (['resource', 'application'] as const) : (['api'] as const)).map(
          async (by) => [by, await analytics.top(scope, window, by)] as const,
        ),
      );
      const byAi: AiBy[] = scope.kind === 'application' ? ['model', 'api'] : ['model', 'application', 'api'];
      const aiReports = await Promise.all(byAi.map((by) => analytics.ai(scope, window, by)));
      const ai: AiReports | null =
        aiReports.length > 0 && aiReports[0].totals.requests > 0
          ? { totals: aiReports[0].totals, unpricedModels: aiReports[0].unpricedModels, by: byAi.map((by, i) => [by, aiReports[i].groups] as const) }
          : null;
      const mcp: McpToolReports | null =
        scope.kind === 'api'
          ? {
              byTool: (await analytics.top(scope, window, 'tool', 100)).list,
              byApplication: (await analytics.top(scope, window, 'tool_application', 100)).list,
            }
          : null;
      return { summary, traffic, latency, errors, throttled, tops, ai, mcp: mcp && mcp.byTool.length > 0 ? mcp : null };
    },
    [key],
  );
  const d = data.data;
  const scale = latencyScale(d ? d.latency.points.flatMap((p) => [p.total.p95Us, p.gateway.p95Us, p.backend.p95Us]) : []);
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>{title}</Title>
        <SegmentedControl
          aria-label="Time window"
          value={name}
          onChange={(v) => setName(v as WindowName)}
          data={Object.entries(WINDOWS).map(([value, x]) => ({ value, label: x.label }))}
        />
      </Group>
      <Loading error={data.error} loading={data.loading && !d}>
        {d && (
          <>
            <SimpleGrid cols={{ base: 2, md: 4 }} aria-label="Totals">
              <Stat label="Requests" value={d.summary.totals.requests.toLocaleString()} />
              <Stat label="Errors" value={d.summary.totals.errors.toLocaleString()} />
              <Stat label="Throttled" value={d.summary.totals.throttled.toLocaleString()} />
              <Stat
                label="p95 latency"
                value={duration(d.summary.latency.total.p95Us)}
                hint={`gateway ${duration(d.summary.latency.gateway.p95Us)} · back end ${duration(d.summary.latency.backend.p95Us)}`}
              />
            </SimpleGrid>
            <Card withBorder component="section" aria-label="Traffic">
              <Title order={4} mb="sm">
                Traffic
              </Title>
              <AreaChart
                h={220}
                curveType="linear"
                data-testid="traffic-chart"
                data-points={d.traffic.points.length}
                data={d.traffic.points.map((p) => ({ time: clock(p.timestamp, w.interval), requests: p.requests, errors: p.errors, throttled: p.throttled }))}
                dataKey="time"
                series={[
                  { name: 'requests', color: 'blue.6' },
                  { name: 'errors', color: 'red.6' },
                  { name: 'throttled', color: 'orange.6' },
                ]}
                withLegend
              />
            </Card>
            <Card withBorder component="section" aria-label="Latency">
              <Title order={4} mb="sm">
                Latency, p95 ({scale.unit}): gateway vs back end
              </Title>
              <LineChart
                h={220}
                curveType="linear"
                connectNulls={false}
                data={d.latency.points.map((p) => ({
                  time: clock(p.timestamp, w.interval),
                  total: scaled(p.total.p95Us, scale.divisor),
                  gateway: scaled(p.gateway.p95Us, scale.divisor),
                  'back end': scaled(p.backend.p95Us, scale.divisor),
                }))}
                dataKey="time"
                series={[
                  { name: 'total', color: 'gray.6' },
                  { name: 'gateway', color: 'teal.6' },
                  { name: 'back end', color: 'violet.6' },
                ]}
                withLegend
              />
              <LatencyTable latency={d.latency} />
            </Card>
            {d.ai && <AiUsage ai={d.ai} />}
            {d.mcp && <McpTools tools={d.mcp} />}
            <SimpleGrid cols={{ base: 1, md: 2 }}>
              {d.tops.map(([by, top]) => (
                <Card withBorder key={by} component="section" aria-label={`Top ${by}s`}>
                  <Title order={4} mb="sm">
                    Top {by === 'api' ? 'APIs' : by === 'application' ? 'applications' : 'resources'}
                  </Title>
                  <Table fz="sm">
                    <Table.Tbody>
                      {top.list.map((r, i) => (
                        <Table.Tr key={i}>
                          <Table.Td>
                            {by === 'application'
                              ? r.applicationName || r.applicationId || '(no application)'
                              : by === 'resource'
                                ? `${r.method} ${r.resource}`
                                : `${r.apiName} ${r.apiVersion}`}
                          </Table.Td>
                          <Table.Td ta="right">{r.requests.toLocaleString()}</Table.Td>
                          <Table.Td ta="right">{r.errors.toLocaleString()} errors</Table.Td>
                          <Table.Td ta="right">p95 {duration(r.latency?.total.p95Us)}</Table.Td>
                        </Table.Tr>
                      ))}
                    </Table.Tbody>
                  </Table>
                  {top.list.length === 0 && <Text c="dimmed">No traffic in this window.</Text>}
                </Card>
              ))}
            </SimpleGrid>
            <SimpleGrid cols={{ base: 1, md: 2 }}>
              <Card withBorder component="section" aria-label="Errors">
                <Title order={4} mb="sm">
                  Errors
                </Title>
                <Table fz="sm">
                  <Table.Tbody>
                    {d.errors.list.map((e, i) => (
                      <Table.Tr key={i}>
                        <Table.Td>{e.outcome}</Table.Td>
                        <Table.Td>{e.reason}</Table.Td>
                        <Table.Td>{e.statusClass}</Table.Td>
                        <Table.Td ta="right">{e.requests.toLocaleString()}</Table.Td>
                      </Table.Tr>
                    ))}
                  </Table.Tbody>
                </Table>
                {d.errors.list.length === 0 && <Text c="dimmed">No errors.</Text>}
              </Card>
              <Card withBorder component="section" aria-label="Throttled">
                <Title order={4} mb="sm">
                  Throttled
                </Title>
                <Table fz="sm">
                  <Table.Tbody>
                    {d.throttled.list.map((t, i) => (
                      <Table.Tr key={i}>
                        <Table.Td>{t.policy}</Table.Td>
                        <Table.Td>
                          {t.apiContext} {t.apiVersion}
                        </Table.Td>
                        <Table.Td>{t.applicationName || t.applicationId}</Table.Td>
                        <Table.Td ta="right">{t.requests.toLocaleString()}</Table.Td>
                      </Table.Tr>
                    ))}
                  </Table.Tbody>
                </Table>
                {d.throttled.list.length === 0 && <Text c="dimmed">Nothing throttled.</Text>}
              </Card>
            </SimpleGrid>
          </>
        )}
      </Loading>
    </Stack>
  );
}

function Stat({ label, value, hint }: { label: string; value: string; hint?: string }) {
  return (
    <Card withBorder>
      <Text size="sm" c="dimmed">
        {label}
      </Text>
      <Text fz="xl" fw={700} data-testid={`stat-${label}`}>
        {value}
      </Text>
      {hint && (
        <Text size="xs" c="dimmed">
          {hint}
        </Text>
      )}
    </Card>
  );
}

function LatencyTable({ latency }: { latency: { total: LatencyBlock; gateway: LatencyBlock; backend: LatencyBlock } }) {
  return (
    <Table fz="sm" mt="sm" aria-label="Latency percentiles">
      <Table.Thead>
        <Table.Tr>
          <Table.Th />
          <Table.Th ta="right">p50</Table.Th>
          <Table.Th ta="right">p90</Table.Th>
          <Table.Th ta="right">p95</Table.Th>
          <Table.Th ta="right">p99</Table.Th>
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {(
          [
            ['total', latency.total],
            ['gateway', latency.gateway],
            ['back end', latency.backend],
          ] as const
        ).map(([n, b]) => (
          <Table.Tr key={n}>
            <Table.Td>{n}</Table.Td>
            <Table.Td ta="right">{duration(b.p50Us)}</Table.Td>
            <Table.Td ta="right">{duration(b.p90Us)}</Table.Td>
            <Table.Td ta="right">{duration(b.p95Us)}</Table.Td>
            <Table.Td ta="right">{duration(b.p99Us)}</Table.Td>
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}
