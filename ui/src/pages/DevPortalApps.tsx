// The Developer Portal's applications: the list (create), and an application's page:
// its settings (rename, describe; delete with a confirmation), OAuth2 keys per key type
// (production and sandbox: generate, regenerate the secret, each secret shown once;
// redirect URIs for the authorization code grant), API keys, usage, and its
// subscriptions (unsubscribe with a confirmation).
import { useState } from 'react';
import { Alert, Anchor, Badge, Button, Card, Code, Group, Modal, Stack, Table, Text, TextInput, Textarea, Title } from '@mantine/core';
import { devportal } from '../api/calls';
import type { Application, OAuthKeys, Subscription } from '../api/types';
import { errorText, useLoad } from '../lib/load';
import { Link, navigate } from '../router';
import { ApiKeys } from './ApiKeys';
import { ErrorNote, Loading, StateBadge } from './common';
import { ConfirmButton } from './Confirm';
import { KeyLine } from './KeyLine';
import { LazyDashboards } from './LazyDashboards';

export function AppList() {
  const apps = useLoad(() => devportal.applications(), []);
  const [name, setName] = useState('');
  const [error, setError] = useState<string | null>(null);
  const create = async () => {
    setError(null);
    try {
      const app = await devportal.createApplication({ name, throttlingPolicy: 'Unlimited', description: '' });
      navigate(`/devportal/applications/${app.id}`);
    } catch (e) {
      setError(errorText(e));
    }
  };
  return (
    <Stack>
      <Title order={2}>Applications</Title>
      <Card withBorder maw={560}>
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void create();
          }}
        >
          <Group align="flex-end">
            <TextInput label="New application" placeholder="my-app" value={name} onChange={(e) => setName(e.currentTarget.value)} required />
            <Button type="submit">Create</Button>
          </Group>
          <ErrorNote error={error} />
        </form>
      </Card>
      <Loading error={apps.error} loading={apps.loading && !apps.data}>
        <Table.ScrollContainer minWidth={320}>
          <Table aria-label="Applications">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Name</Table.Th>
                <Table.Th>Owner</Table.Th>
                <Table.Th>Tier</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {apps.data?.list.map((a) => (
                <Table.Tr key={a.id}>
                  <Table.Td>
                    <Anchor component={Link} href={`/devportal/applications/${a.id}`}>
                      {a.name}
                    </Anchor>
                  </Table.Td>
                  <Table.Td>{a.owner}</Table.Td>
                  <Table.Td>{a.throttlingPolicy}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      </Loading>
    </Stack>
  );
}

/** An application's two key pairs (WSO2): production, and sandbox for sandbox endpoints. */
const KEY_TYPES = [
  { type: 'PRODUCTION', label: 'production' },
  { type: 'SANDBOX', label: 'sandbox' },
] as const;

/** Name and description, saved as a merge patch; Delete asks first. */
function AppSettings({ app, onSaved }: { app: Application; onSaved: () => void }) {
  const [name, setName] = useState(app.name);
  const [description, setDescription] = useState(app.description);
  const [note, setNote] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const save = async () => {
    setError(null);
    setNote(null);
    try {
      await devportal.updateApplication(app.id, { name, description });
      setNote('Saved.');
      onSaved();
    } catch (e) {
      setError(errorText(e));
    }
  };
  return (
    <Card withBorder component="section" aria-label="Application settings">
      <Title order={4} mb="sm">
        Settings
      </Title>
      <Stack gap="xs">
        <TextInput label="Application name" value={name} onChange={(e) => setName(e.currentTarget.value)} required />
        <Textarea label="Description" autosize minRows={1} value={description} onChange={(e) => setDescription(e.currentTarget.value)} />
        <Group>
          <Button onClick={() => void save()}>Save</Button>
          <ConfirmButton
            label="Delete application"
            color="red"
            variant="light"
            onConfirm={async () => {
              await devportal.deleteApplication(app.id);
              navigate('/devportal/applications');
            }}
          >
            {`Delete ${app.name}? Its keys stop working at once and its subscriptions end. This cannot be undone.`}
          </ConfirmButton>
          {note && <Text c="green">{note}</Text>}
        </Group>
        <ErrorNote error={error} />
      </Stack>
    </Card>
  );
}

/** The key pair's redirect URIs, one a line: any lets the application sign users in with
 * the authorization code grant (PKCE) at /oauth2/authorize. */
function RedirectUris({ appId, keys }: { appId: string; keys: OAuthKeys }) {
  const [text, setText] = useState((keys.redirectUris ?? []).join('\n'));
  const [note, setNote] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const save = async () => {
    setError(null);
    setNote(null);
    try {
      const uris = text.split('\n').map((u) => u.trim()).filter(Boolean);
      await devportal.setRedirectUris(appId, keys.keyType === 'SANDBOX' ? 'SANDBOX' : 'PRODUCTION', uris);
      // The list stays as typed (no reload: reloading the keys would remount this form).
      setNote('Redirect URIs saved.');
    } catch (e) {
      setError(errorText(e));
    }
  };
  return (
    <Stack gap={4} pl="md">
      <Textarea
        label={`Redirect URIs (${keys.keyType.toLowerCase()})`}
        description="One a line. Registering one lets the application sign users in with the authorization code grant (PKCE S256) at /oauth2/authorize."
        placeholder="https://app.example.com/callback"
        autosize
        minRows={1}
        value={text}
        onChange={(e) => setText(e.currentTarget.value)}
      />
      <Group>
        <Button size="xs" variant="light" onClick={() => void save()}>
          Save redirect URIs
        </Button>
        {note && <Text size="sm" c="green">{note}</Text>}
      </Group>
      <ErrorNote error={error} />
    </Stack>
  );
}

function OAuthKeysCard({ appId }: { appId: string }) {
  const keys = useLoad(() => devportal.keys(appId), [appId]);
  const [fresh, setFresh] = useState<OAuthKeys | null>(null);
  const [error, setError] = useState<string | null>(null);
  const act = async (f: () => Promise<OAuthKeys>) => {
    setError(null);
    try {
      setFresh(await f());
      keys.reload();
    } catch (e) {
      setError(errorText(e));
    }
  };
  return (
    <Card withBorder component="section" aria-label="OAuth2 keys">
      <Title order={4} mb="sm">
        OAuth2 keys
      </Title>
      <Stack gap="xs">
        {KEY_TYPES.map(({ type, label }) => {
          const k = keys.data?.list.find((c) => c.keyType === type);
          return k ? (
            <Stack key={type} gap={4}>
              <Group gap="xs" wrap="wrap">
                <Badge variant="light" color={type === 'SANDBOX' ? 'orange' : undefined}>
                  {type}
                </Badge>
                <Text size="sm">Consumer key</Text>
                <Code style={{ overflowWrap: 'anywhere' }}>{k.consumerKey}</Code>
                <ConfirmButton
                  label={`Regenerate ${label} secret`}
                  size="xs"
                  variant="subtle"
                  confirmColor="orange"
                  onConfirm={() => act(() => devportal.regenerateSecret(appId, type))}
                >
                  {`The current ${label} consumer secret stops working now; the new one is shown once.`}
                </ConfirmButton>
              </Group>
              <RedirectUris key={k.consumerKey} appId={appId} keys={k} />
            </Stack>
          ) : (
            keys.data && (
              <Group key={type}>
                <Button variant={type === 'SANDBOX' ? 'light' : 'filled'} onClick={() => void act(() => devportal.generateKeys(appId, type))}>
                  Generate {label} keys
                </Button>
              </Group>
            )
          );
        })}
      </Stack>
      <ErrorNote error={error} />
      <Modal opened={fresh !== null} onClose={() => setFresh(null)} title="Your new keys" size="lg">
        {fresh && (
          <Stack>
            <Alert color="yellow" title="Shown once">
              Copy the consumer secret now: it is stored hashed and cannot be shown again.
            </Alert>
            <Text size="sm">
              Key type <Badge variant="light">{fresh.keyType}</Badge>
            </Text>
            <KeyLine label="Consumer key" value={fresh.consumerKey} />
            <KeyLine label="Consumer secret" value={fresh.consumerSecret ?? ''} />
            <Text size="sm">
              Token: <Code style={{ overflowWrap: 'anywhere' }}>curl -u KEY:SECRET -d grant_type=client_credentials {window.location.origin}/oauth2/token</Code>
            </Text>
            <Button onClick={() => setFresh(null)}>I have copied it</Button>
          </Stack>
        )}
      </Modal>
    </Card>
  );
}

/** One subscription of the application, with Unsubscribe (asks first). */
export function SubscriptionLine({ sub, label, href, onGone }: { sub: Subscription; label: string; href?: string; onGone: () => void }) {
  return (
    <Group gap="xs" role="listitem" aria-label={`Subscription ${label}`}>
      {href ? (
        <Anchor component={Link} href={href} size="sm">
          {label}
        </Anchor>
      ) : (
        <Text size="sm">{label}</Text>
      )}
      <Badge variant="outline">{sub.throttlingPolicy}</Badge>
      <StateBadge state={sub.status} />
      <ConfirmButton
        label="Unsubscribe"
        size="xs"
        variant="subtle"
        color="red"
        onConfirm={async () => {
          await devportal.unsubscribe(sub.id);
          onGone();
        }}
      >
        The application's keys stop reaching this API at once. You can subscribe again later.
      </ConfirmButton>
    </Group>
  );
}

export function AppPage({ id }: { id: string }) {
  const app = useLoad(() => devportal.application(id), [id]);
  const subs = useLoad(() => devportal.subscriptions({ applicationId: id }), [id]);
  const apis = useLoad(() => devportal.apis(''), []);
  const apiName = (apiId: string) => {
    const a = apis.data?.list.find((x) => x.id === apiId);
    return a ? `${a.name} ${a.version}` : apiId;
  };
  return (
    <Loading error={app.error} loading={app.loading && !app.data}>
      {app.data && (
        <Stack>
          <div>
            <Anchor component={Link} href="/devportal/applications" size="sm">
              ← Applications
            </Anchor>
            <Title order={2}>{app.data.name}</Title>
            <Text c="dimmed">Tier {app.data.throttlingPolicy}</Text>
          </div>
          <AppSettings key={app.data.id} app={app.data} onSaved={app.reload} />
          <OAuthKeysCard appId={id} />
          <ApiKeys appId={id} />
          <LazyDashboards scope={{ kind: 'application', applicationId: id }} title="Usage" />
          <Card withBorder component="section" aria-label="Subscriptions">
            <Title order={4} mb="sm">
              Subscriptions
            </Title>
            <Loading error={subs.error} loading={subs.loading && !subs.data}>
              <Stack gap={4} role="list">
                {subs.data?.list.map((s) => (
                  <SubscriptionLine
                    key={s.id}
                    sub={s}
                    label={apiName(s.apiId)}
                    href={`/devportal/apis/${s.apiId}`}
                    onGone={subs.reload}
                  />
                ))}
              </Stack>
              {subs.data?.list.length === 0 && <Text c="dimmed">Subscribe from an API's page.</Text>}
            </Loading>
          </Card>
        </Stack>
      )}
    </Loading>
  );
}
