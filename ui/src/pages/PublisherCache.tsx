// The Publisher's editor for an API's response cache (docs/caching.md): the API's
// `cacheConfiguration` (TTL, methods, statuses, key parts, sizes, stale answers, tag
// header), each resource's own setting (the API's, off, or its own TTL), and purges (all,
// by upstream path prefix, by tag) after a confirmation. Saves with a JSON Merge Patch of
// `cacheConfiguration` and `resources`; the control plane checks them by compiling the
// API and names each bad field (`cacheConfiguration.ttl`, `resources[1].cacheConfiguration.ttl`).
import { useState } from 'react';
import {
  Button,
  Card,
  Checkbox,
  Group,
  Modal,
  SegmentedControl,
  Select,
  SimpleGrid,
  Stack,
  Switch,
  Table,
  Text,
  TextInput,
} from '@mantine/core';
import { publisher, type CachePurge } from '../api/calls';
import type { Api } from '../api/types';
import { configOf, formOf, modeOf, text, type CacheConfig, type Form, type ResourceCache } from '../lib/cacheForm';
import { errorText } from '../lib/load';
import { quantity } from '../lib/units';
import { ErrorNote } from './common';
import { useSave } from './PublisherPolicies';

type Resource = Api['resources'][number] & { cacheConfiguration?: ResourceCache };
type WithCache = Api & { cacheConfiguration?: CacheConfig | null; resources: Resource[] };

const CACHE_METHODS = ['GET', 'HEAD', 'POST'];
const MODES = [
  { value: 'api', label: "API's settings" },
  { value: 'off', label: 'Not cached' },
  { value: 'own', label: 'Own TTL' },
];

export function CacheEditor({ api, onSaved, canEdit }: { api: Api; onSaved: () => void; canEdit: boolean }) {
  const start = api as WithCache;
  const [form, setForm] = useState<Form>(formOf(start.cacheConfiguration));
  const [resources, setResources] = useState<Resource[]>(start.resources);
  const { save, note } = useSave(api.id, onSaved);
  const set = (f: Partial<Form>) => setForm({ ...form, ...f });
  const setCache = (i: number, c: ResourceCache) =>
    setResources(resources.map((r, j) => (j === i ? { ...r, cacheConfiguration: c } : r)));

  const submit = () =>
    void save({ cacheConfiguration: configOf(form, start.cacheConfiguration), resources: resources.map(withoutUndefined) });

  return (
    <Stack maw={960}>
      <Card withBorder>
        <form
          onSubmit={(e) => {
            e.preventDefault();
            submit();
          }}
        >
          <Stack>
            <Switch
              label="Cache responses"
              description="Answers repeated reads at the gateway (after authentication and throttling); what may be stored follows the response's Cache-Control (RFC 9111)."
              checked={form.enabled}
              onChange={(e) => set({ enabled: e.currentTarget.checked })}
              disabled={!canEdit}
            />
            {form.enabled && (
              <>
                <SimpleGrid cols={3}>
                  <TextInput label="TTL" description="when the response states none" placeholder="60s" value={form.ttl} onChange={(e) => set({ ttl: e.currentTarget.value })} disabled={!canEdit} />
                  <TextInput label="Max size" description="this API's entries, in bytes" placeholder="64MiB" value={form.maxSize} onChange={(e) => set({ maxSize: e.currentTarget.value })} disabled={!canEdit} />
                  <TextInput label="Max entry size" description="larger answers pass through" placeholder="1MiB" value={form.maxEntry} onChange={(e) => set({ maxEntry: e.currentTarget.value })} disabled={!canEdit} />
                  <TextInput label="Stale while revalidate" description="served STALE while one request refreshes" placeholder="0s" value={form.swr} onChange={(e) => set({ swr: e.currentTarget.value })} disabled={!canEdit} />
                  <TextInput label="Stale if error" description="served STALE instead of a 5xx" placeholder="0s" value={form.sie} onChange={(e) => set({ sie: e.currentTarget.value })} disabled={!canEdit} />
                  <TextInput label="Tag header" description="response header tagging entries, for purges" placeholder="Cache-Tag" value={form.tagHeader} onChange={(e) => set({ tagHeader: e.currentTarget.value })} disabled={!canEdit} />
                  <TextInput label="Store from request" description="a key's answer is stored from its Nth request; 2 spares one-off keys the cost of storing" placeholder="1" value={form.minUses} onChange={(e) => set({ minUses: e.currentTarget.value })} disabled={!canEdit} />
                </SimpleGrid>
                <Checkbox.Group label="Methods cached" value={form.methods} onChange={(m) => set({ methods: m })}>
                  <Group gap="md" mt={4}>
                    {CACHE_METHODS.map((m) => (
                      <Checkbox key={m} value={m} label={m} disabled={!canEdit} />
                    ))}
                  </Group>
                </Checkbox.Group>
                <TextInput label="Statuses cached" description="comma-separated; 200, 203, 204, 300, 301, 308, 404, 410 when empty" value={form.statuses} onChange={(e) => set({ statuses: e.currentTarget.value })} disabled={!canEdit} />
                <Text fw={600}>Cache key</Text>
                <Group>
                  <Switch label="Query string" checked={form.query} onChange={(e) => set({ query: e.currentTarget.checked })} disabled={!canEdit} />
                  <Switch label="Consumer (unless the answer is public)" checked={form.consumer} onChange={(e) => set({ consumer: e.currentTarget.checked })} disabled={!canEdit} />
                </Group>
                <Switch
                  label="Shared with the cluster (Redis)"
                  description="a second level in the gateways' Redis (their --redis): one gateway's stored answers serve the others"
                  checked={form.shared}
                  onChange={(e) => set({ shared: e.currentTarget.checked })}
                  disabled={!canEdit}
                />
                <Switch
                  label="Store every miss"
                  description="admission: always; off (the default), while a burst of requests earns almost no hits, a miss stores only a key asked before"
                  checked={form.storeEveryMiss}
                  onChange={(e) => set({ storeEveryMiss: e.currentTarget.checked })}
                  disabled={!canEdit}
                />
                <TextInput label="Key headers" description="comma-separated request headers (at most 16)" value={form.headers} onChange={(e) => set({ headers: e.currentTarget.value })} disabled={!canEdit} />
              </>
            )}
            <ResourceCaches resources={resources} setCache={setCache} canEdit={canEdit} />
            {note}
            {canEdit && (
              <Group justify="flex-end">
                <Button type="submit">Save cache</Button>
              </Group>
            )}
          </Stack>
        </form>
      </Card>
      {start.cacheConfiguration && <Purge apiId={api.id} canEdit={canEdit} />}
    </Stack>
  );
}

/** A resource as sent: without a `cacheConfiguration` key when it has none. */
function withoutUndefined(r: Resource): Resource {
  if (r.cacheConfiguration !== undefined) return r;
  const { cacheConfiguration: _, ...rest } = r;
  return rest;
}

function ResourceCaches({ resources, setCache, canEdit }: { resources: Resource[]; setCache: (i: number, c: ResourceCache) => void; canEdit: boolean }) {
  if (resources.length === 0) return null;
  return (
    <>
      <Text fw={600}>Per resource</Text>
      <Text size="sm" c="dimmed">
        A resource may keep the API's settings, be left uncached, or have its own TTL (its other settings stay the API's).
      </Text>
      <Table aria-label="Resource caches">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Resource</Table.Th>
            <Table.Th>Cache</Table.Th>
            <Table.Th>TTL</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {resources.map((r, i) => {
            const c = r.cacheConfiguration;
            const mode = modeOf(c);
            const name = `${r.methods.join(',')} ${r.path}`;
            return (
              <Table.Tr key={i}>
                <Table.Td>
                  <code>{name}</code>
                </Table.Td>
                <Table.Td>
                  <Select
                    aria-label={`Cache of ${name}`}
                    data={MODES}
                    value={mode}
                    allowDeselect={false}
                    onChange={(v) => setCache(i, v === 'off' ? false : v === 'own' ? { ttl: '60s' } : undefined)}
                    disabled={!canEdit}
                    w={170}
                  />
                </Table.Td>
                <Table.Td>
                  {typeof c === 'object' && (
                    <TextInput
                      aria-label={`TTL of ${name}`}
                      value={text(c.ttl)}
                      onChange={(e) => setCache(i, { ...c, ttl: quantity(e.currentTarget.value) })}
                      disabled={!canEdit}
                      w={110}
                    />
                  )}
                </Table.Td>
              </Table.Tr>
            );
          })}
        </Table.Tbody>
      </Table>
    </>
  );
}

/** Purges the API's cached answers on every gateway, after a confirmation. */
function Purge({ apiId, canEdit }: { apiId: string; canEdit: boolean }) {
  const [what, setWhat] = useState<'all' | 'prefix' | 'tag'>('all');
  const [value, setValue] = useState('');
  const [asking, setAsking] = useState(false);
  const [done, setDone] = useState<CachePurge | null>(null);
  const [error, setError] = useState<string | null>(null);
  const target = what === 'all' ? 'every cached answer of this API' : what === 'prefix' ? `answers under ${value}` : `answers tagged ${value}`;
  const purge = async () => {
    setAsking(false);
    setError(null);
    setDone(null);
    try {
      const body = what === 'all' ? {} : { [what]: value.trim() };
      setDone(await publisher.purgeCache(apiId, body));
    } catch (e) {
      setError(errorText(e));
    }
  };
  return (
    <Card withBorder>
      <Stack>
        <Text fw={600}>Purge</Text>
        <Text size="sm" c="dimmed">
          Removes stored answers from every gateway (each applies the purge when the next snapshot reaches it).
        </Text>
        <Group align="flex-end">
          <SegmentedControl
            aria-label="Purge what"
            value={what}
            onChange={(v) => setWhat(v as 'all' | 'prefix' | 'tag')}
            data={[
              { value: 'all', label: 'All' },
              { value: 'prefix', label: 'By prefix' },
              { value: 'tag', label: 'By tag' },
            ]}
            disabled={!canEdit}
          />
          {what !== 'all' && (
            <TextInput
              label={what === 'prefix' ? 'Upstream path prefix' : 'Tag'}
              placeholder={what === 'prefix' ? '/orders/' : 't1'}
              value={value}
              onChange={(e) => setValue(e.currentTarget.value)}
              disabled={!canEdit}
            />
          )}
          <Button color="red" variant="light" onClick={() => setAsking(true)} disabled={!canEdit || (what !== 'all' && !value.trim())}>
            Purge
          </Button>
        </Group>
        <ErrorNote error={error} />
        {done && (
          <Text c="green" role="status">
            Purge {done.id} sent{done.prefix ? ` (prefix ${done.prefix})` : done.tag ? ` (tag ${done.tag})` : ' (all)'}: every gateway applies it with the next snapshot.
          </Text>
        )}
      </Stack>
      <Modal opened={asking} onClose={() => setAsking(false)} title="Purge cached answers?">
        <Stack>
          <Text>Remove {target} from every gateway? The next requests go to the back end.</Text>
          <Group justify="flex-end">
            <Button variant="default" onClick={() => setAsking(false)}>
              Cancel
            </Button>
            <Button color="red" onClick={() => void purge()}>
              Purge now
            </Button>
          </Group>
        </Stack>
      </Modal>
    </Card>
  );
}
