// The Admin console: tiers of every family, users and roles, all applications, the
// gateways with their snapshot version and lag, signing keys (rotate), and where the
// analytics dashboards (traffic, errors, throttled, latency split, top APIs and
// applications), the audit log, the MCP tool calls' audit trail, the portal settings.
import { useState } from 'react';
import {
  Badge,
  Button,
  Card,
  Checkbox,
  Group,
  Modal,
  PasswordInput,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { admin, type SigningKey } from '../api/calls';
import type { Role, User } from '../api/types';
import { errorText, useLoad } from '../lib/load';
import { ErrorNote, Loading, StateBadge } from './common';
import { Settings } from './AdminSettings';
import { Gateways } from './AdminGateways';
import { AuditLog } from './AuditLog';
import { McpAudit } from './McpAudit';
import { Applications } from './AdminApplications';
import { Tiers } from './AdminTiers';
import { LazyDashboards } from './LazyDashboards';

export const adminNav = [
  { href: '/admin', label: 'Tiers' },
  { href: '/admin/users', label: 'Users' },
  { href: '/admin/applications', label: 'Applications' },
  { href: '/admin/gateways', label: 'Gateways' },
  { href: '/admin/keys', label: 'Signing keys' },
  { href: '/admin/dashboards', label: 'Dashboards' },
  { href: '/admin/audit', label: 'Audit log' },
  { href: '/admin/mcp-audit', label: 'MCP audit' },
  { href: '/admin/settings', label: 'Settings' },
];

export function AdminPage({ path }: { path: string }) {
  switch (path.replace(/\/$/, '')) {
    case '/admin/users':
      return <Users />;
    case '/admin/applications':
      return <Applications />;
    case '/admin/gateways':
      return <Gateways />;
    case '/admin/keys':
      return <Keys />;
    case '/admin/dashboards':
      return <LazyDashboards scope={{ kind: 'admin' }} title="Dashboards" />;
    case '/admin/settings':
      return <Settings />;
    case '/admin/audit':
      return <AuditLog />;
    case '/admin/mcp-audit':
      return <McpAudit />;
    default:
      return <Tiers />;
  }
}

function Users() {
  const users = useLoad(() => admin.users(), []);
  const [name, setName] = useState('');
  const [password, setPassword] = useState('');
  const [roles, setRoles] = useState<Role[]>(['subscriber']);
  const [error, setError] = useState<string | null>(null);
  const create = async () => {
    setError(null);
    try {
      await admin.createUser({ name, password, roles });
      setName('');
      setPassword('');
      setRoles(['subscriber']);
      users.reload();
    } catch (e) {
      setError(errorText(e));
    }
  };
  const act = async (f: () => Promise<void>) => {
    setError(null);
    try {
      await f();
      users.reload();
    } catch (e) {
      setError(errorText(e));
    }
  };
  return (
    <Stack>
      <Title order={2}>Users</Title>
      <Card withBorder maw={820}>
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void create();
          }}
        >
          <Group align="flex-end">
            <TextInput label="Username" value={name} onChange={(e) => setName(e.currentTarget.value)} required />
            <PasswordInput label="Password" description="At least 8 characters" value={password} onChange={(e) => setPassword(e.currentTarget.value)} required />
            <Checkbox.Group label="Roles" value={roles} onChange={(v) => setRoles(v as Role[])}>
              <Group gap="sm" mt={6} mb={8}>
                {ROLES.map((r) => (
                  <Checkbox key={r} value={r} label={r} />
                ))}
              </Group>
            </Checkbox.Group>
            <Button type="submit">Add user</Button>
          </Group>
        </form>
        <ErrorNote error={error} />
      </Card>
      <Loading error={users.error} loading={users.loading && !users.data}>
        <Table aria-label="Users" maw={820}>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Username</Table.Th>
              <Table.Th>Roles</Table.Th>
              <Table.Th>Status</Table.Th>
              <Table.Th />
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {users.data?.list.map((u) => (
              <Table.Tr key={u.name}>
                <Table.Td>{u.name}</Table.Td>
                <Table.Td>
                  <Group gap={4}>
                    {u.roles.map((r) => (
                      <Badge key={r} variant="light">
                        {r}
                      </Badge>
                    ))}
                    <RolesEditor user={u} onSaved={users.reload} />
                  </Group>
                </Table.Td>
                <Table.Td>
                  <StateBadge state={u.status ?? 'ACTIVE'} />
                </Table.Td>
                <Table.Td>
                  <Group gap={4} wrap="nowrap">
                    {u.status === 'PENDING' && (
                      <Button size="xs" variant="light" onClick={() => void act(() => admin.setUserStatus(u.name, 'ACTIVE'))} aria-label={`Approve user ${u.name}`}>
                        Approve
                      </Button>
                    )}
                    <Button size="xs" variant="subtle" color="red" onClick={() => void act(() => admin.deleteUser(u.name))} aria-label={`Delete user ${u.name}`}>
                      Delete
                    </Button>
                  </Group>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Loading>
    </Stack>
  );
}

const ROLES = ['admin', 'publisher', 'subscriber'];

/** "Roles": a user's roles changed in a dialog (the last active admin cannot be demoted:
 * the control plane answers 409 and the dialog says why). */
function RolesEditor({ user, onSaved }: { user: User; onSaved: () => void }) {
  const [open, setOpen] = useState(false);
  const [roles, setRoles] = useState<string[]>(user.roles);
  const [error, setError] = useState<string | null>(null);
  const save = async () => {
    setError(null);
    try {
      await admin.setUserRoles(user.name, roles);
      setOpen(false);
      onSaved();
    } catch (e) {
      setError(errorText(e));
    }
  };
  return (
    <>
      <Button size="compact-xs" variant="subtle" onClick={() => (setRoles(user.roles), setError(null), setOpen(true))} aria-label={`Change roles of ${user.name}`}>
        Change
      </Button>
      <Modal opened={open} onClose={() => setOpen(false)} title={`Roles of ${user.name}`}>
        <Stack>
          <Checkbox.Group value={roles} onChange={setRoles}>
            <Group gap="sm">
              {ROLES.map((r) => (
                <Checkbox key={r} value={r} label={r} />
              ))}
            </Group>
          </Checkbox.Group>
          <Text size="sm" c="dimmed">
            A role taken away counts at once; a role added counts from the user's next sign-in (the portal token they hold keeps its scopes).
          </Text>
          <ErrorNote error={error} />
          <Group justify="flex-end">
            <Button onClick={() => void save()}>Save roles</Button>
          </Group>
        </Stack>
      </Modal>
    </>
  );
}



function Keys() {
  const keys = useLoad(() => admin.keys(), []);
  const [error, setError] = useState<string | null>(null);
  const rotate = async () => {
    setError(null);
    try {
      await admin.rotateKeys();
      keys.reload();
    } catch (e) {
      setError(errorText(e));
    }
  };
  return (
    <Stack>
      <Group justify="space-between" maw={820}>
        <Title order={2}>Signing keys</Title>
        <Button onClick={() => void rotate()}>Rotate</Button>
      </Group>
      <Text size="sm" c="dimmed" maw={820}>
        Rotating makes a new key the signer at once; older keys stay published until the tokens they signed expire.
      </Text>
      <ErrorNote error={error} />
      <Loading error={keys.error} loading={keys.loading && !keys.data}>
        <Table aria-label="Signing keys" maw={820}>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Key id</Table.Th>
              <Table.Th>Algorithm</Table.Th>
              <Table.Th>Created</Table.Th>
              <Table.Th />
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {keys.data?.list.map((k: SigningKey) => {
              const created = k.created_at;
              return (
                <Table.Tr key={k.kid}>
                  <Table.Td>
                    <code>{k.kid}</code>
                  </Table.Td>
                  <Table.Td>{k.alg}</Table.Td>
                  <Table.Td>{created ? new Date(created * 1000).toLocaleString() : ''}</Table.Td>
                  <Table.Td>{k.active && <Badge color="green">signing</Badge>}</Table.Td>
                </Table.Tr>
              );
            })}
          </Table.Tbody>
        </Table>
      </Loading>
    </Stack>
  );
}

