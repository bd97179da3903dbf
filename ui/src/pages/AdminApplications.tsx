// The Admin console's applications: every user's, by name, with their owner, searched by
// name or owner, 50 a page (`GET /api/am/admin/v1/applications`).
import { useState } from 'react';
import { Button, Group, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { admin } from '../api/calls';
import { useLoad } from '../lib/load';
import { Loading, StateBadge } from './common';

const PAGE = 50;

export function Applications() {
  const [search, setSearch] = useState('');
  const [offset, setOffset] = useState(0);
  const apps = useLoad(() => admin.applications({ query: search || undefined, limit: PAGE, offset }), [search, offset]);
  const total = apps.data?.pagination?.total ?? apps.data?.count ?? 0;
  return (
    <Stack>
      <Title order={2}>Applications</Title>
      <TextInput
        label="Search"
        placeholder="application name or owner"
        value={search}
        onChange={(e) => (setSearch(e.currentTarget.value), setOffset(0))}
        maw={420}
      />
      <Loading error={apps.error} loading={apps.loading && !apps.data}>
        <Table aria-label="Applications" maw={1100}>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Name</Table.Th>
              <Table.Th>Owner</Table.Th>
              <Table.Th>Tier</Table.Th>
              <Table.Th>Status</Table.Th>
              <Table.Th>Id</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {apps.data?.list.map((a) => (
              <Table.Tr key={a.id}>
                <Table.Td>{a.name}</Table.Td>
                <Table.Td>{a.owner}</Table.Td>
                <Table.Td>{a.throttlingPolicy}</Table.Td>
                <Table.Td>
                  <StateBadge state={a.status ?? 'ACTIVE'} />
                </Table.Td>
                <Table.Td>
                  <code>{a.id}</code>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
        {total === 0 && <Text c="dimmed">No application matches.</Text>}
        <Group justify="space-between" maw={1100}>
          <Text size="sm" c="dimmed" data-testid="applications-range">
            {total > 0 ? `${offset + 1}-${Math.min(offset + PAGE, total)} of ${total}` : ''}
          </Text>
          <Group gap="xs">
            <Button variant="default" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE))}>
              Previous
            </Button>
            <Button variant="default" disabled={offset + PAGE >= total} onClick={() => setOffset(offset + PAGE)}>
              Next
            </Button>
          </Group>
        </Group>
      </Loading>
    </Stack>
  );
}
