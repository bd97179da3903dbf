// The Admin console: tiers of every family, users and roles, all applications, the
// gateways with their snapshot version and lag, signing keys (rotate), and where the
// analytics dashboards (traffic, errors, throttled, latency split, top APIs and
// applications), the audit log, the portal settings.
import { useState } from 'react';
import {
  Badge,
  Button,
  Card,
  Checkbox,
  Group,
  NumberInput,
  PasswordInput,
  SegmentedControl,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { admin, type Gateway, type SigningKey, type TierKind } from '../api/calls';
import type { Role } from '../api/types';
import { errorText, useLoad } from '../lib/load';
import { ErrorNote, Loading, StateBadge } from './common';
import { Settings } from './AdminSettings';
import { AuditLog } from './AuditLog';
import { LazyDashboards } from './LazyDashboards';

export const adminNav = [
  { href: '/admin', label: 'Tiers' },
  { href: '/admin/users', label: 'Users' },
  { href: '/admin/applications', label: 'Applications' },
  { href: '/admin/gateways', label: 'Gateways' },
  { href: '/admin/keys', label: 'Signing keys' },
  { href: '/admin/dashboards', label: 'Dashboards' },
  { href: '/admin/audit', label: 'Audit log' },
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
    default:
      return <Tiers />;
  }
}

function Tiers() {
  const [kind, setKind] = useState<TierKind>('subscription');
  const tiers = useLoad(() => admin.tiers(kind), [kind]);
  const [name, setName] = useState('');
  const [count, setCount] = useState<number | string>(100);
  const [unit, setUnit] = useState<number | string>(60);
  const [description, setDescription] = useState('');
  const [error, setError] = useState<string | null>(null);
  const create = async () => {
    setError(null);
    try {
      await admin.createTier(kind, {
        name,
        description,
        requestCount: Number(count),
        unitSeconds: Number(unit),
      });
      setName('');
      tiers.reload();
    } catch (e) {
      setError(errorText(e));
    }
  };
  const remove = async (n: string) => {
    setError(null);
    try {
      await admin.deleteTier(kind, n);
      tiers.reload();
    } catch (e) {
      setError(errorText(e));
    }
  };
  return (
    <Stack>
      <Title order={2}>Tiers</Title>
      <SegmentedControl
        aria-label="Tier family"
        value={kind}
        onChange={(v) => setKind(v as TierKind)}
        data={[
          { value: 'subscription', label: 'Subscription' },
          { value: 'application', label: 'Application' },
          { value: 'advanced', label: 'Advanced' },
        ]}
        maw={480}
      />
      <Card withBorder maw={820}>
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void create();
          }}
        >
          <Group align="flex-end">
            <TextInput label="Tier name" value={name} onChange={(e) => setName(e.currentTarget.value)} required />
            <NumberInput label="Requests" min={1} value={count} onChange={setCount} w={120} />
            <NumberInput label="Per seconds" min={1} value={unit} onChange={setUnit} w={120} />
            <TextInput label="Description" value={description} onChange={(e) => setDescription(e.currentTarget.value)} />
            <Button type="submit">Add tier</Button>
          </Group>
        </form>
        <ErrorNote error={error} />
      </Card>
      <Loading error={tiers.error} loading={tiers.loading && !tiers.data}>
        <Table aria-label="Tiers" maw={820}>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Name</Table.Th>
              <Table.Th>Limit</Table.Th>
              <Table.Th>Description</Table.Th>
              <Table.Th />
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {tiers.data?.list.map((t) => (
              <Table.Tr key={t.name}>
                <Table.Td>{t.name}</Table.Td>
                <Table.Td>{t.requestCount == null ? 'unlimited' : `${t.requestCount} / ${t.unitSeconds} s`}</Table.Td>
                <Table.Td>{t.description}</Table.Td>
                <Table.Td>
                  <Button size="xs" variant="subtle" color="red" onClick={() => void remove(t.name)} aria-label={`Delete tier ${t.name}`}>
                    Delete
                  </Button>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Loading>
    </Stack>
  );
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
                {['admin', 'publisher', 'subscriber'].map((r) => (
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

function Applications() {
  const apps = useLoad(() => admin.applications(), []);
  return (
    <Stack>
      <Title order={2}>Applications</Title>
      <Loading error={apps.error} loading={apps.loading && !apps.data}>
        <Table aria-label="Applications" maw={820}>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Name</Table.Th>
              <Table.Th>Owner</Table.Th>
              <Table.Th>Tier</Table.Th>
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
                  <code>{a.id}</code>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Loading>
    </Stack>
  );
}

function Gateways() {
  const gws = useLoad(() => admin.gateways(), []);
  const secs = (ms?: number | null) => (ms == null ? '—' : `${(ms / 1000).toFixed(1)} s`);
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
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {gws.data?.list.map((g: Gateway) => {
              const serving = g.servingVersion;
              const upToDate = g.upToDate;
              const conv = g.lastConvergenceMs;
              const behind = g.versionsBehind;
              return (
                <Table.Tr key={g.id}>
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
                  <Table.Td data-testid={`lag-${g.id}`}>{secs(g.lagMs)}</Table.Td>
                  <Table.Td>{g.lastSeenMsAgo} ms ago</Table.Td>
                  <Table.Td>{g.applyMs == null ? '—' : `${g.applyMs} ms`}</Table.Td>
                  <Table.Td>{conv == null ? '—' : `${conv} ms`}</Table.Td>
                  <Table.Td>{g.controlPlane || '—'}</Table.Td>
                </Table.Tr>
              );
            })}
          </Table.Tbody>
        </Table>
      </Loading>
    </Stack>
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

