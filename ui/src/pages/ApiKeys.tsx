// An application's API keys in the Developer Portal: listed (name, created, expiry),
// created (the key shown once: the control plane keeps only its SHA-256) and revoked.
// Gateways accept them in the `apikey` header (or the API's configured header/query).
// A key is PRODUCTION or SANDBOX: sandbox keys reach the API's sandbox endpoints.
import { useState } from 'react';
import { Alert, Badge, Button, Card, Group, Modal, NumberInput, Select, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { apiKeys, type ApiKey } from '../api/calls';
import type { KeyType } from '../api/types';
import { errorText, useLoad } from '../lib/load';
import { ErrorNote, Loading } from './common';
import { KeyLine } from './KeyLine';

const day = 86_400;

export function ApiKeys({ appId }: { appId: string }) {
  const keys = useLoad(() => apiKeys.list(appId), [appId]);
  const [name, setName] = useState('');
  const [days, setDays] = useState<number | string>('');
  const [keyType, setKeyType] = useState<KeyType>('PRODUCTION');
  const [fresh, setFresh] = useState<ApiKey | null>(null);
  const [error, setError] = useState<string | null>(null);
  const act = async (f: () => Promise<unknown>) => {
    setError(null);
    try {
      await f();
      keys.reload();
    } catch (e) {
      setError(errorText(e));
    }
  };
  const create = () =>
    act(async () => {
      setFresh(await apiKeys.create(appId, name || 'default', typeof days === 'number' && days > 0 ? days * day : undefined, keyType));
      setName('');
    });
  return (
    <Card withBorder component="section" aria-label="API keys">
      <Title order={4} mb="sm">
        API keys
      </Title>
      <Loading error={keys.error} loading={keys.loading && !keys.data}>
        {keys.data && keys.data.list.length > 0 && (
          <Table aria-label="API keys" mb="sm">
            <Table.Tbody>
              {keys.data.list.map((k) => (
                <Table.Tr key={k.id}>
                  <Table.Td>{k.name}</Table.Td>
                  <Table.Td>
                    <Badge variant="light" color={k.keyType === 'SANDBOX' ? 'orange' : undefined}>
                      {k.keyType}
                    </Badge>
                  </Table.Td>
                  <Table.Td>{new Date(k.createdTime).toLocaleString()}</Table.Td>
                  <Table.Td>{k.expiresAt ? `expires ${new Date(k.expiresAt * 1000).toLocaleDateString()}` : 'no expiry'}</Table.Td>
                  <Table.Td>
                    <Button size="xs" variant="subtle" color="red" onClick={() => void act(() => apiKeys.revoke(appId, k.id))} aria-label={`Revoke API key ${k.name}`}>
                      Revoke
                    </Button>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        )}
      </Loading>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void create();
        }}
      >
        <Group align="flex-end">
          <TextInput label="Key name" placeholder="default" value={name} onChange={(e) => setName(e.currentTarget.value)} />
          <Select
            label="Key type"
            data={['PRODUCTION', 'SANDBOX']}
            value={keyType}
            onChange={(v) => setKeyType(v === 'SANDBOX' ? 'SANDBOX' : 'PRODUCTION')}
            allowDeselect={false}
            w={150}
          />
          <NumberInput label="Valid for (days)" placeholder="no expiry" min={1} max={3650} value={days} onChange={setDays} w={160} />
          <Button type="submit">Create API key</Button>
        </Group>
      </form>
      <ErrorNote error={error} />
      <Modal opened={fresh !== null} onClose={() => setFresh(null)} title="Your new API key" size="lg">
        {fresh && (
          <Stack>
            <Alert color="yellow" title="Shown once">
              Copy the key now: it is stored hashed and cannot be shown again.
            </Alert>
            <KeyLine label="API key" value={fresh.apikey ?? ''} />
            <Text size="sm">Send it in the <code>apikey</code> header.</Text>
            <Button onClick={() => setFresh(null)}>I have copied it</Button>
          </Stack>
        )}
      </Modal>
    </Card>
  );
}
