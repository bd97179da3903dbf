// Small pieces the three portals share.
import { Alert, Badge, Button, Center, Group, Loader, Text } from '@mantine/core';
import type { ReactNode } from 'react';

export function Loading({ error, loading, children }: { error: string | null; loading: boolean; children?: ReactNode }) {
  if (error)
    return (
      <Alert color="red" title="Could not load" role="alert">
        {error}
      </Alert>
    );
  if (loading)
    return (
      <Center p="xl">
        <Loader aria-label="Loading" />
      </Center>
    );
  return <>{children}</>;
}

const STATE_COLORS: Record<string, string> = {
  PUBLISHED: 'green',
  CREATED: 'gray',
  PROTOTYPED: 'cyan',
  DEPRECATED: 'orange',
  BLOCKED: 'red',
  RETIRED: 'dark',
  ACTIVE: 'green',
  PROD_ONLY_BLOCKED: 'orange',
  ON_HOLD: 'yellow',
  PENDING: 'yellow',
  DISABLED: 'red',
  REJECTED: 'red',
};

export function StateBadge({ state }: { state: string }) {
  return (
    <Badge color={STATE_COLORS[state] ?? 'gray'} variant="light">
      {state}
    </Badge>
  );
}

export function ErrorNote({ error }: { error: string | null }) {
  if (!error) return null;
  return (
    <Alert color="red" role="alert" mt="sm">
      {error}
    </Alert>
  );
}

/** The first defined value: the REST APIs' camelCase field or its older snake_case twin. */
export const pick = <T,>(...v: (T | undefined)[]) => v.find((x) => x !== undefined);

/** A newest-first log's paging: where the page is, and newer / older pages. */
export function Pager({ offset, page, total, setOffset }: { offset: number; page: number; total: number; setOffset: (o: number) => void }) {
  return (
    <Group justify="space-between">
      <Text size="sm" c="dimmed">
        {total > 0 ? `${offset + 1}-${Math.min(offset + page, total)} of ${total}` : ''}
      </Text>
      <Group gap="xs">
        <Button variant="default" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - page))}>
          Newer
        </Button>
        <Button variant="default" disabled={offset + page >= total} onClick={() => setOffset(offset + page)}>
          Older
        </Button>
      </Group>
    </Group>
  );
}
