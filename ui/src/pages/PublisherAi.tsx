// The Publisher's AI API pages (docs/ai-gateway.md): the "Create AI API" form (an API
// whose endpoints are LLM providers: one provider, the model names clients may ask for)
// and the AI tab, which edits the whole `ai:` section: providers (kind, URL, key as a
// secret reference, never the key itself), models with their weighted targets, and the
// fallback settings. Both send the section in the declarative file's shape; the control
// plane checks it by compiling the API and names each bad field (`ai.models[0].targets`).
import { useState } from 'react';
import { ActionIcon, Button, Card, Group, Select, Stack, Table, Text, TextInput } from '@mantine/core';
import type { components } from '../api/schema';
import type { Api } from '../api/types';
import { publisher } from '../api/calls';
import { errorText } from '../lib/load';
import { navigate } from '../router';
import { ErrorNote } from './common';
import { useSave } from './PublisherPolicies';

type AiSection = components['schemas']['AiSection'];
type Provider = components['schemas']['AiProvider'];
type Kind = Provider['kind'];

const KINDS: { value: Kind; label: string }[] = [
  { value: 'openai', label: 'OpenAI-compatible' },
  { value: 'anthropic', label: 'Anthropic' },
];

interface TargetRow {
  provider: string;
  model: string;
  weight: string;
}

interface ModelRow {
  name: string;
  targets: TargetRow[];
}

/** A model as edited: its one provider or its targets, each as a row. */
const modelRow = (m: NonNullable<AiSection['models']>[number]): ModelRow => ({
  name: m.name,
  targets: m.targets?.length
    ? m.targets.map((t) => ({ provider: t.provider, model: t.model ?? '', weight: t.weight === undefined ? '' : String(t.weight) }))
    : [{ provider: m.provider ?? '', model: m.model ?? '', weight: '' }],
});

/** A model as sent: one target without a weight stays `provider`/`model`. */
const modelSpec = (m: ModelRow): NonNullable<AiSection['models']>[number] => {
  const targets = m.targets.filter((t) => t.provider);
  if (targets.length === 1 && !targets[0].weight.trim()) {
    return { name: m.name, provider: targets[0].provider, ...(targets[0].model ? { model: targets[0].model } : {}) };
  }
  return {
    name: m.name,
    targets: targets.map((t) => ({
      provider: t.provider,
      ...(t.model ? { model: t.model } : {}),
      // Text that is not a number is sent as typed: the control plane names the field.
      ...(t.weight.trim() ? { weight: /^\d+$/.test(t.weight.trim()) ? Number(t.weight) : (t.weight as unknown as number) } : {}),
    })),
  };
};

const emptyProvider = (): Provider => ({ name: '', kind: 'openai', url: '' });

/** The `ai:` section of an API, when it has one. */
export const aiSection = (api: Api): AiSection | undefined => (api as Api & { ai?: AiSection | null }).ai ?? undefined;

function ProviderRows({ rows, set, canEdit }: { rows: Provider[]; set: (rows: Provider[]) => void; canEdit: boolean }) {
  const edit = (i: number, p: Partial<Provider>) => set(rows.map((x, j) => (j === i ? { ...x, ...p } : x)));
  return (
    <Table aria-label="Providers">
      <Table.Thead>
        <Table.Tr>
          <Table.Th>Name</Table.Th>
          <Table.Th>Kind</Table.Th>
          <Table.Th>URL</Table.Th>
          <Table.Th>Key reference</Table.Th>
          <Table.Th />
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {rows.map((p, i) => (
          <Table.Tr key={i}>
            <Table.Td>
              <TextInput aria-label={`Provider ${i + 1} name`} value={p.name} onChange={(e) => edit(i, { name: e.currentTarget.value })} disabled={!canEdit} w={120} />
            </Table.Td>
            <Table.Td>
              <Select aria-label={`Provider ${i + 1} kind`} data={KINDS} value={p.kind} onChange={(v) => edit(i, { kind: (v as Kind) ?? 'openai' })} allowDeselect={false} disabled={!canEdit} w={170} />
            </Table.Td>
            <Table.Td>
              <TextInput aria-label={`Provider ${i + 1} URL`} placeholder="https://api.openai.com/v1" value={p.url} onChange={(e) => edit(i, { url: e.currentTarget.value })} disabled={!canEdit} />
            </Table.Td>
            <Table.Td>
              <TextInput aria-label={`Provider ${i + 1} key reference`} placeholder="env:OPENAI_API_KEY" value={p.key ?? ''} onChange={(e) => edit(i, { key: e.currentTarget.value || undefined })} disabled={!canEdit} w={190} />
            </Table.Td>
            <Table.Td>
              {canEdit && rows.length > 1 && (
                <ActionIcon variant="subtle" color="red" aria-label={`Remove provider ${i + 1}`} onClick={() => set(rows.filter((_, j) => j !== i))}>
                  ×
                </ActionIcon>
              )}
            </Table.Td>
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}

function ModelCard({ m, i, providers, set, remove, canEdit }: {
  m: ModelRow;
  i: number;
  providers: string[];
  set: (m: ModelRow) => void;
  remove: () => void;
  canEdit: boolean;
}) {
  const target = (k: number, t: Partial<TargetRow>) => set({ ...m, targets: m.targets.map((x, j) => (j === k ? { ...x, ...t } : x)) });
  return (
    <Card withBorder padding="sm">
      <Stack gap="xs">
        <Group>
          <TextInput aria-label={`Model ${i + 1} name`} label="Model name clients ask for" value={m.name} onChange={(e) => set({ ...m, name: e.currentTarget.value })} disabled={!canEdit} />
          {canEdit && (
            <Button variant="subtle" color="red" onClick={remove} mt="lg">
              Remove model
            </Button>
          )}
        </Group>
        {m.targets.map((t, k) => (
          <Group key={k} gap="xs">
            <Select aria-label={`Model ${i + 1} target ${k + 1} provider`} data={providers} value={t.provider || null} onChange={(v) => target(k, { provider: v ?? '' })} placeholder="provider" disabled={!canEdit} w={150} />
            <TextInput aria-label={`Model ${i + 1} target ${k + 1} model`} placeholder="provider's model (same name)" value={t.model} onChange={(e) => target(k, { model: e.currentTarget.value })} disabled={!canEdit} />
            <TextInput aria-label={`Model ${i + 1} target ${k + 1} weight`} placeholder="weight" value={t.weight} onChange={(e) => target(k, { weight: e.currentTarget.value })} disabled={!canEdit} w={90} />
          </Group>
        ))}
        {canEdit && (
          <Group>
            <Button variant="default" size="xs" onClick={() => set({ ...m, targets: [...m.targets, { provider: '', model: '', weight: '' }] })}>
              Add target
            </Button>
          </Group>
        )}
      </Stack>
    </Card>
  );
}

/** The AI tab: the whole `ai:` section. */
export function AiEditor({ api, onSaved, canEdit }: { api: Api; onSaved: () => void; canEdit: boolean }) {
  const start = aiSection(api);
  const [providers, setProviders] = useState<Provider[]>(start?.providers.length ? start.providers : [emptyProvider()]);
  const [models, setModels] = useState<ModelRow[]>((start?.models ?? []).map(modelRow));
  const [fallback, setFallback] = useState({
    retries: String(start?.fallback?.retries ?? ''),
    suspendAfter: String(start?.fallback?.suspend_after ?? ''),
    suspendFor: String(start?.fallback?.suspend_for ?? ''),
  });
  const { save, note } = useSave(api.id, onSaved);
  const names = providers.map((p) => p.name).filter(Boolean);
  const submit = () => {
    // A JSON Merge Patch: `null` removes a field (a setting left blank); the lists
    // (providers, models) are replaced whole.
    const num = (t: string) => (t.trim() ? Number(t) : null);
    const fb = { retries: num(fallback.retries), suspend_after: num(fallback.suspendAfter), suspend_for: fallback.suspendFor.trim() || null };
    const blank = Object.values(fb).every((v) => v === null) && start?.fallback?.max_attempts === undefined;
    const ai = { providers, models: models.map(modelSpec), fallback: blank ? null : fb };
    // The providers' URLs are the API's endpoints: left to the gateway.
    void save({ ai, endpoints: [] });
  };
  return (
    <Card withBorder maw={1000}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          submit();
        }}
      >
        <Stack>
          <Text fw={600}>Providers</Text>
          <Text size="sm" c="dimmed">
            The key is a secret reference the gateway reads (<code>env:NAME</code> or <code>file:/path</code>), never the key itself.
          </Text>
          <ProviderRows rows={providers} set={setProviders} canEdit={canEdit} />
          {canEdit && (
            <Group>
              <Button variant="default" size="xs" onClick={() => setProviders([...providers, emptyProvider()])}>
                Add provider
              </Button>
            </Group>
          )}
          <Text fw={600}>Models</Text>
          <Text size="sm" c="dimmed">
            Several targets share a model's calls by weight (0 is a standby); a target that fails (429, 5xx, no connection) is followed by the next.
          </Text>
          {models.map((m, i) => (
            <ModelCard key={i} m={m} i={i} providers={names} canEdit={canEdit} set={(x) => setModels(models.map((y, j) => (j === i ? x : y)))} remove={() => setModels(models.filter((_, j) => j !== i))} />
          ))}
          {canEdit && (
            <Group>
              <Button variant="default" size="xs" onClick={() => setModels([...models, { name: '', targets: [{ provider: names[0] ?? '', model: '', weight: '' }] }])}>
                Add model
              </Button>
            </Group>
          )}
          <Text fw={600}>Fallback</Text>
          <Group>
            <TextInput label="Retries of a target" placeholder="0" value={fallback.retries} onChange={(e) => setFallback({ ...fallback, retries: e.currentTarget.value })} disabled={!canEdit} w={150} />
            <TextInput label="Suspend after failures" placeholder="3" value={fallback.suspendAfter} onChange={(e) => setFallback({ ...fallback, suspendAfter: e.currentTarget.value })} disabled={!canEdit} w={180} />
            <TextInput label="Suspend for" placeholder="30s" value={fallback.suspendFor} onChange={(e) => setFallback({ ...fallback, suspendFor: e.currentTarget.value })} disabled={!canEdit} w={150} />
          </Group>
          {note}
          {canEdit && (
            <Group justify="flex-end">
              <Button type="submit">Save AI settings</Button>
            </Group>
          )}
        </Stack>
      </form>
    </Card>
  );
}

/** "Create AI API": an API whose endpoint is an LLM provider, with the models it serves. */
export function CreateAiApi() {
  const [name, setName] = useState('');
  const [context, setContext] = useState('');
  const [version, setVersion] = useState('v1');
  const [provider, setProvider] = useState<Provider>({ ...emptyProvider(), name: 'main' });
  const [models, setModels] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async () => {
    setBusy(true);
    setError(null);
    try {
      const names = models.split(',').map((m) => m.trim()).filter(Boolean);
      const ai: AiSection = {
        providers: [{ ...provider, key: provider.key || undefined }],
        models: names.map((m) => ({ name: m, provider: provider.name })),
      };
      const api = await publisher.create({ name, context, version, ai } as Parameters<typeof publisher.create>[0]);
      navigate(`/publisher/apis/${api.id}`);
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        void submit();
      }}
    >
      <Stack>
        <TextInput label="Name" value={name} onChange={(e) => setName(e.currentTarget.value)} required />
        <Group grow>
          <TextInput label="Context" placeholder="/ai" value={context} onChange={(e) => setContext(e.currentTarget.value)} required />
          <TextInput label="Version" value={version} onChange={(e) => setVersion(e.currentTarget.value)} required />
        </Group>
        <Group grow>
          <TextInput label="Provider name" value={provider.name} onChange={(e) => setProvider({ ...provider, name: e.currentTarget.value })} required />
          <Select label="Provider kind" data={KINDS} value={provider.kind} onChange={(v) => setProvider({ ...provider, kind: (v as Kind) ?? 'openai' })} allowDeselect={false} />
        </Group>
        <TextInput label="Provider URL" description="the provider's base URL up to its version segment" placeholder="https://api.openai.com/v1" value={provider.url} onChange={(e) => setProvider({ ...provider, url: e.currentTarget.value })} required />
        <TextInput label="Provider key reference" description="env:NAME or file:/path, read by the gateway; empty for none" placeholder="env:OPENAI_API_KEY" value={provider.key ?? ''} onChange={(e) => setProvider({ ...provider, key: e.currentTarget.value })} />
        <TextInput label="Models" description="the model names clients may ask for, comma-separated; empty: any name" placeholder="gpt-4o-mini, gpt-4o" value={models} onChange={(e) => setModels(e.currentTarget.value)} />
        <ErrorNote error={error} />
        <Group justify="flex-end">
          <Button type="submit" loading={busy}>
            Create
          </Button>
        </Group>
      </Stack>
    </form>
  );
}
