// The Admin console's Gateways page: every gateway with its snapshot version and lag,
// and (expand a row) each endpoint's state as the gateway last reported it: APIs with
// resilience settings report their endpoints (active, suspended, probing, unhealthy),
// when a suspension ends, counted failures and requests in flight (docs/resilience.md).
import { Fragment, useState } from 'react';
import { Badge, Button, Group, Stack, Table, Text, Title } from '@mantine/core';
import { admin } from '../api/calls';
import type { EndpointState, Gateway } from '../api/types';
import { useLoad } from '../lib/load';
import { Loading } from './common';

const secs = (ms?: number | null) => (ms == null ? '—' : `${(ms / 1000).toFixed(1)} s`);

const stateColour: Record<string, string> = {
  active: 'green',
  suspended: 'red',
  probing: 'yellow',
  unhealthy: 'red',
};

function Endpoints({ gateway, list, total }: { gateway: string; list: EndpointState[]; total?: number }) {
  if (list.length === 0) {
    return <Text c="dimmed">No tracked endpoints (only APIs with resilience settings report theirs).</Text>;
  }
  return (
    <Stack gap={4}>
      <Table aria-label={`Endpoints of ${gateway}`} withTableBorder>
        <Table.Thead>
          <Table.Tr>
            <Table.Th>API</Table.Th>
            <Table.Th>Endpoint</Table.Th>
            <Table.Th>Pool</Table.Th>
            <Table.Th>State</Table.Th>
            <Table.Th>Until</Table.Th>
            <Table.Th>Failures</Table.Th>
            <Table.Th>In flight</Table.Th>
            <Table.Th>Suspensions</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {list.map((e) => (
            <Table.Tr key={`${e.id} ${e.pool} ${e.endpoint}`}>
              <Table.Td>
                {e.api} {e.version} <Text span c="dimmed">({e.id})</Text>
              </Table.Td>
              <Table.Td>{e.endpoint}</Table.Td>
              <Table.Td>{e.pool}</Table.Td>
              <Table.Td>
                <Badge color={stateColour[e.state] ?? 'gray'} variant="light">
                  {e.state}
                </Badge>
              </Table.Td>
              <Table.Td>{e.untilMs == null ? '—' : new Date(e.untilMs).toLocaleTimeString()}</Table.Td>
              <Table.Td>{e.failures}</Table.Td>
              <Table.Td>{e.inFlight}</Table.Td>
              <Table.Td>{e.suspensions}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {total != null && total > list.length && (
        <Text size="sm" c="dimmed">
          {list.length} of {total} endpoints shown (those not active first).
        </Text>
      )}
    </Stack>
  );
}

function GatewayRow({ g, current }: { g: Gateway; current: number }) {
  const [open, setOpen] = useState(false);
  const serving = g.servingVersion ?? 0;
  const upToDate = g.upToDate;
  const conv = g.lastConvergenceMs;
  const behind = g.versionsBehind ?? current - serving;
  const endpoints = g.endpoints ?? [];
  const down = endpoints.filter((e) => e.state !== 'active').length;
  return (
    <Fragment>
      <Table.Tr>
        <Table.Td>{g.id}</Table.Td>
        <Table.Td>{serving}</Table.Td>
        <Table.Td>
          {g.lagging ? (
            <Badge color="red" variant="light">
              lagging
            </Badge>
          ) : (
            <Badge color={upToDate ? 'green' : 'orange'} variant="light">
              {upToDate ? 'up to date' : `${behind} behind`}
            </Badge>
          )}
        </Table.Td>
        <Table.Td data-testid={`lag-${g.id}`}>{secs(g.lagMs ?? 0)}</Table.Td>
        <Table.Td>{g.lastSeenMsAgo} ms ago</Table.Td>
        <Table.Td>{g.applyMs == null ? '—' : `${g.applyMs} ms`}</Table.Td>
        <Table.Td>{conv == null ? '—' : `${conv} ms`}</Table.Td>
        <Table.Td>{g.controlPlane ?? '—'}</Table.Td>
        <Table.Td>
          <Button
            size="compact-sm"
            variant="subtle"
            aria-expanded={open}
            aria-label={`Endpoints of gateway ${g.id}`}
            onClick={() => setOpen((o) => !o)}
          >
            {open ? '▾' : '▸'} {endpoints.length}
            {down > 0 && ` (${down} not active)`}
          </Button>
        </Table.Td>
      </Table.Tr>
      {open && (
        <Table.Tr>
          <Table.Td colSpan={9}>
            <Endpoints gateway={g.id} list={endpoints} total={g.report?.endpointsTotal as number | undefined} />
          </Table.Td>
        </Table.Tr>
      )}
    </Fragment>
  );
}

export function Gateways() {
  const gws = useLoad(() => admin.gateways(), []);
  const current = gws.data?.controlPlaneVersion ?? 0;
  return (
    <Stack>
      <Group justify="space-between" maw={1100}>
        <Title order={2}>Gateways</Title>
        <Button variant="default" onClick={gws.reload}>
          Refresh
        </Button>
      </Group>
      <Loading error={gws.error} loading={gws.loading && !gws.data}>
        <Text>
          Control plane version {gws.data?.controlPlaneVersion}
          {gws.data?.maxLagMs != null && ` · lagging past ${secs(gws.data.maxLagMs)}: ${gws.data.lagging ?? 0}`}
        </Text>
        <Table aria-label="Gateways" maw={1100}>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Gateway</Table.Th>
              <Table.Th>Serving version</Table.Th>
              <Table.Th>State</Table.Th>
              <Table.Th>Lag</Table.Th>
              <Table.Th>Last seen</Table.Th>
              <Table.Th>Apply</Table.Th>
              <Table.Th>Last convergence</Table.Th>
              <Table.Th>Control plane</Table.Th>
              <Table.Th>Endpoints</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {gws.data?.list.map((g: Gateway) => <GatewayRow key={g.id} g={g} current={current} />)}
          </Table.Tbody>
        </Table>
      </Loading>
    </Stack>
  );
}
