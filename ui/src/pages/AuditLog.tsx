// The Admin console's audit log: every committed control-plane write, newest first (who,
// what, when, the version it made), filtered by user and text, 50 a page.
import { useState } from 'react';
import { Group, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { admin } from '../api/calls';
import { useLoad } from '../lib/load';
import { Loading, Pager } from './common';

const PAGE = 50;

export function AuditLog() {
  const [user, setUser] = useState('');
  const [text, setText] = useState('');
  const [offset, setOffset] = useState(0);
  const log = useLoad(() => admin.auditLog({ user: user || undefined, q: text || undefined, limit: PAGE, offset }), [user, text, offset]);
  const total = log.data?.pagination?.total ?? log.data?.count ?? 0;
  return (
    <Stack>
      <Title order={2}>Audit log</Title>
      <Group>
        <TextInput label="User" value={user} onChange={(e) => (setUser(e.currentTarget.value), setOffset(0))} />
        <TextInput label="Action contains" value={text} onChange={(e) => (setText(e.currentTarget.value), setOffset(0))} />
      </Group>
      <Loading error={log.error} loading={log.loading && !log.data}>
        <Table aria-label="Audit log" striped>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Time</Table.Th>
              <Table.Th>User</Table.Th>
              <Table.Th>Action</Table.Th>
              <Table.Th ta="right">Version</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {log.data?.list.map((e) => (
              <Table.Tr key={e.version}>
                <Table.Td>{new Date(e.timestamp).toLocaleString()}</Table.Td>
                <Table.Td>{e.user}</Table.Td>
                <Table.Td title={e.summary}>{e.action}</Table.Td>
                <Table.Td ta="right">{e.version}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
        {total === 0 && <Text c="dimmed">No change matches.</Text>}
        <Pager offset={offset} page={PAGE} total={total} setOffset={setOffset} />
      </Loading>
    </Stack>
  );
}
