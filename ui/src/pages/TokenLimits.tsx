// A tier's token budgets (LLM APIs): total, prompt or completion tokens per time unit,
// at most four. The Admin tier form edits them; tables and the Developer Portal show
// them as text. `every` and `by` keys set through the REST API or a file are kept.
import { ActionIcon, Button, Group, NumberInput, Select, Stack, Text } from '@mantine/core';
import type { Tier } from '../api/types';

export type TokenLimit = NonNullable<Tier['tokenLimits']>[number];
type Part = 'total' | 'prompt' | 'completion';
type Per = TokenLimit['per'];

/** One row of the editor: what it counts, how many per what, and what it keeps. */
export type TokenRow = { part: Part; count: number | string; per: Per; every?: number; by?: string[] };

const MAX = 4;
const PARTS: { value: Part; label: string }[] = [
  { value: 'total', label: 'Total tokens' },
  { value: 'prompt', label: 'Prompt tokens' },
  { value: 'completion', label: 'Completion tokens' },
];
const PERS: { value: Per; label: string }[] = [
  { value: 'minute', label: 'per minute' },
  { value: 'hour', label: 'per hour' },
  { value: 'day', label: 'per day' },
  { value: 'month', label: 'per month' },
  { value: 'second', label: 'per second' },
];

function partOf(l: TokenLimit): [Part, number] {
  if (l.prompt != null) return ['prompt', l.prompt];
  if (l.completion != null) return ['completion', l.completion];
  return ['total', l.total ?? 0];
}

export function rowsOf(limits: TokenLimit[] | undefined): TokenRow[] {
  return (limits ?? []).map((l) => {
    const [part, count] = partOf(l);
    return { part, count, per: l.per, every: l.every, by: l.by };
  });
}

export function limitsOf(rows: TokenRow[]): TokenLimit[] {
  return rows.map((r) => ({
    [r.part]: Number(r.count),
    per: r.per,
    ...(r.every && r.every > 1 ? { every: r.every } : {}),
    ...(r.by?.length ? { by: r.by } : {}),
  }));
}

/** `5000 tokens / minute, 200000 prompt tokens / day (per model)`. */
export function tokenText(limits: TokenLimit[]): string {
  return limits
    .map((l) => {
      const [part, count] = partOf(l);
      const what = part === 'total' ? 'tokens' : `${part} tokens`;
      const per = l.every && l.every > 1 ? `${l.every} ${l.per}s` : l.per;
      const by = l.by?.length ? ` (per ${l.by.join(', ')})` : '';
      return `${count} ${what} / ${per}${by}`;
    })
    .join(', ');
}

export function TokenLimitsField({ rows, onChange }: { rows: TokenRow[]; onChange: (rows: TokenRow[]) => void }) {
  const set = (i: number, change: Partial<TokenRow>) => onChange(rows.map((r, j) => (j === i ? { ...r, ...change } : r)));
  return (
    <Stack gap={4} role="group" aria-label="Token limits">
      <Text size="sm" fw={500}>
        Token limits <Text span size="xs" c="dimmed">(LLM APIs: checked before a call against its estimate, charged with its usage)</Text>
      </Text>
      {rows.map((r, i) => (
        <Group key={i} gap={4} align="flex-end">
          <Select aria-label={`Token limit ${i + 1} counts`} data={PARTS} value={r.part} onChange={(v) => set(i, { part: (v ?? 'total') as Part })} w={170} allowDeselect={false} />
          <NumberInput aria-label={`Token limit ${i + 1} tokens`} min={1} value={r.count} onChange={(v) => set(i, { count: v })} w={130} />
          <Select aria-label={`Token limit ${i + 1} window`} data={PERS} value={r.per} onChange={(v) => set(i, { per: (v ?? 'minute') as Per })} w={130} allowDeselect={false} />
          {r.by?.length ? (
            <Text size="xs" c="dimmed">
              per {r.by.join(', ')}
            </Text>
          ) : null}
          <ActionIcon variant="subtle" color="red" aria-label={`Remove token limit ${i + 1}`} onClick={() => onChange(rows.filter((_, j) => j !== i))}>
            ×
          </ActionIcon>
        </Group>
      ))}
      {rows.length < MAX && (
        <Button size="xs" variant="light" w="fit-content" onClick={() => onChange([...rows, { part: 'total', count: 10000, per: 'minute' }])}>
          Add token limit
        </Button>
      )}
    </Stack>
  );
}
