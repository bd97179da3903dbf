// The Admin console's tiers: every family (subscription, application, advanced), each a
// request count or a bandwidth (bytes) per time unit; subscription tiers add a burst
// limit (a spike cap under the quota) and the LLM API models their subscribers may call
// (empty: every model; others get 403 model_not_allowed at the gateway); any tier may add
// token budgets for LLM APIs (TokenLimits.tsx). Added and edited in one form, deleted
// from the table.
import { useState } from 'react';
import { Button, Card, Group, NumberInput, SegmentedControl, Select, Stack, Table, TagsInput, Text, TextInput, Title } from '@mantine/core';
import { admin, type TierKind } from '../api/calls';
import type { Tier } from '../api/types';
import { errorText, useLoad } from '../lib/load';
import { ErrorNote, Loading } from './common';
import { ConfirmButton } from './Confirm';
import { TokenLimitsField, tokenText, type TokenRow, rowsOf, limitsOf } from './TokenLimits';

type Limit = 'requests' | 'bandwidth';
const UNITS = [
  { value: '1', label: 'B' },
  { value: '1024', label: 'KiB' },
  { value: '1048576', label: 'MiB' },
  { value: '1073741824', label: 'GiB' },
];

/** A byte count in the largest unit that divides it. */
export function bytes(n: number): string {
  const unit = [...UNITS].reverse().find((u) => n % Number(u.value) === 0) ?? UNITS[0];
  return `${n / Number(unit.value)} ${unit.label}`;
}

function limitText(t: Tier): string {
  const quota =
    t.dataAmount != null ? `${bytes(t.dataAmount)} / ${t.unitSeconds} s` : t.requestCount == null ? 'unlimited' : `${t.requestCount} / ${t.unitSeconds} s`;
  const withBurst = t.burst ? `${quota} · burst ${t.burst.requests} / ${t.burst.per}` : quota;
  const withTokens = t.tokenLimits?.length ? `${withBurst} · ${tokenText(t.tokenLimits)}` : withBurst;
  return t.models?.length ? `${withTokens} · models ${t.models.join(', ')}` : withTokens;
}

/** What the REST API caps a tier's model list at (turnpike-admin's `allowed_models`). */
const MAX_MODELS = 1000;

export function Tiers() {
  const [kind, setKind] = useState<TierKind>('subscription');
  const tiers = useLoad(() => admin.tiers(kind), [kind]);
  // The tier being edited (its name is fixed), or null: the form adds one.
  const [editing, setEditing] = useState<Tier | null>(null);
  // A new form after each save (the next tier starts from the defaults).
  const [saves, setSaves] = useState(0);
  const remove = async (n: string) => {
    await admin.deleteTier(kind, n);
    tiers.reload();
  };
  return (
    <Stack>
      <Title order={2}>Tiers</Title>
      <SegmentedControl
        aria-label="Tier family"
        value={kind}
        onChange={(v) => (setKind(v as TierKind), setEditing(null))}
        data={[
          { value: 'subscription', label: 'Subscription' },
          { value: 'application', label: 'Application' },
          { value: 'advanced', label: 'Advanced' },
        ]}
        maw={480}
      />
      <TierForm
        key={`${kind}/${editing?.name ?? ''}/${saves}`}
        kind={kind}
        current={editing}
        onDone={() => (setEditing(null), setSaves((n) => n + 1), tiers.reload())}
      />
      <Loading error={tiers.error} loading={tiers.loading && !tiers.data}>
        <Table aria-label="Tiers" maw={980}>
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
                <Table.Td>{limitText(t)}</Table.Td>
                <Table.Td>{t.description}</Table.Td>
                <Table.Td>
                  <Group gap={4} wrap="nowrap" justify="flex-end">
                    <Button size="xs" variant="light" onClick={() => setEditing(t)} aria-label={`Edit tier ${t.name}`}>
                      Edit
                    </Button>
                    <ConfirmButton
                      size="xs"
                      variant="subtle"
                      color="red"
                      label="Delete"
                      title={`Delete the tier ${t.name}?`}
                      aria-label={`Delete tier ${t.name}`}
                      onConfirm={() => remove(t.name)}
                    >
                      APIs and applications that use it must be moved to another tier first.
                    </ConfirmButton>
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

function TierForm({ kind, current, onDone }: { kind: TierKind; current: Tier | null; onDone: () => void }) {
  const [name, setName] = useState(current?.name ?? '');
  const [limit, setLimit] = useState<Limit>(current?.dataAmount != null ? 'bandwidth' : 'requests');
  const [count, setCount] = useState<number | string>(current?.requestCount ?? 100);
  const [unitBytes, setUnitBytes] = useState<string>(() => {
    const d = current?.dataAmount;
    return [...UNITS].reverse().find((u) => d != null && d % Number(u.value) === 0)?.value ?? '1048576';
  });
  const [amount, setAmount] = useState<number | string>(current?.dataAmount != null ? current.dataAmount / Number(unitBytes) : 10);
  const [unit, setUnit] = useState<number | string>(current?.unitSeconds ?? 60);
  const [burst, setBurst] = useState<number | string>(current?.burst?.requests ?? '');
  const [burstPer, setBurstPer] = useState<string>(current?.burst?.per ?? 'second');
  const [description, setDescription] = useState(current?.description ?? '');
  const [tokens, setTokens] = useState<TokenRow[]>(() => rowsOf(current?.tokenLimits));
  const [models, setModels] = useState<string[]>(current?.models ?? []);
  const [error, setError] = useState<string | null>(null);
  const save = async () => {
    setError(null);
    try {
      const body: Record<string, unknown> = {
        description,
        unitSeconds: Number(unit),
        requestCount: limit === 'requests' ? Number(count) : null,
        dataAmount: limit === 'bandwidth' ? Math.round(Number(amount) * Number(unitBytes)) : null,
      };
      if (kind === 'subscription') body.burst = burst === '' ? null : { requests: Number(burst), per: burstPer };
      // [] clears the list on an edit (every model again); a new tier without one leaves it out.
      if (kind === 'subscription' && (current || models.length)) body.models = models;
      // [] clears them on an edit; a new tier without any leaves the field out.
      if (current || tokens.length) body.tokenLimits = limitsOf(tokens);
      if (current) await admin.patchTier(kind, current.name, body);
      else await admin.createTier(kind, { ...Object.fromEntries(Object.entries(body).filter(([, v]) => v !== null)), name } as Tier);
      onDone();
    } catch (e) {
      setError(errorText(e));
    }
  };
  return (
    <Card withBorder maw={980} component="section" aria-label={current ? `Edit tier ${current.name}` : 'New tier'}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void save();
        }}
      >
        <Stack gap="sm">
          <Group align="flex-end">
            <TextInput label="Tier name" value={name} onChange={(e) => setName(e.currentTarget.value)} required disabled={!!current} />
            <SegmentedControl
              aria-label="Limit by"
              value={limit}
              onChange={(v) => setLimit(v as Limit)}
              data={[
                { value: 'requests', label: 'Request count' },
                { value: 'bandwidth', label: 'Bandwidth' },
              ]}
            />
            {limit === 'requests' ? (
              <NumberInput label="Requests" min={1} value={count} onChange={setCount} w={120} />
            ) : (
              <Group gap={4} align="flex-end">
                <NumberInput label="Data" min={1} value={amount} onChange={setAmount} w={110} />
                <Select aria-label="Data unit" data={UNITS} value={unitBytes} onChange={(v) => setUnitBytes(v ?? '1')} w={90} allowDeselect={false} />
              </Group>
            )}
            <NumberInput label="Per seconds" min={1} value={unit} onChange={setUnit} w={120} />
          </Group>
          <Group align="flex-end">
            {kind === 'subscription' && (
              <Group gap={4} align="flex-end">
                <NumberInput label="Burst limit" description="Optional: requests, a spike cap" min={1} value={burst} onChange={setBurst} w={140} />
                <Select
                  aria-label="Burst per"
                  data={[
                    { value: 'second', label: 'per second' },
                    { value: 'minute', label: 'per minute' },
                  ]}
                  value={burstPer}
                  onChange={(v) => setBurstPer(v ?? 'second')}
                  w={130}
                  allowDeselect={false}
                />
              </Group>
            )}
            <TextInput label="Description" value={description} onChange={(e) => setDescription(e.currentTarget.value)} />
            <Button type="submit">{current ? 'Save tier' : 'Add tier'}</Button>
            {current && (
              <Button variant="default" onClick={onDone}>
                Cancel
              </Button>
            )}
          </Group>
          {kind === 'subscription' && (
            <TagsInput
              label="Allowed models"
              description="LLM APIs: the model names this tier's subscribers may call (Enter after each); empty allows every model"
              placeholder={models.length ? undefined : 'every model'}
              value={models}
              onChange={setModels}
              maxTags={MAX_MODELS}
              splitChars={[',', ' ']}
              clearable
              maw={640}
            />
          )}
          <TokenLimitsField rows={tokens} onChange={setTokens} />
          {current && (
            <Text size="sm" c="dimmed">
              Editing {current.name}: gateways apply the new limits with the next snapshot.
            </Text>
          )}
          <ErrorNote error={error} />
        </Stack>
      </form>
    </Card>
  );
}
