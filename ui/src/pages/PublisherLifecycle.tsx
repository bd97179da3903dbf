// An API's lifecycle in the Publisher: the actions its state allows, those that cut
// subscribers off (Deprecate, Retire, Block) confirmed first; and deleting the API, with
// its subscriptions shown first (the control plane refuses while any remain, as WSO2 does).
import { useState } from 'react';
import { Button, Group, List, Stack, Text } from '@mantine/core';
import { publisher } from '../api/calls';
import type { Api, LifecycleAction } from '../api/types';
import { errorText, useLoad } from '../lib/load';
import { navigate } from '../router';
import { ErrorNote, Loading, StateBadge } from './common';
import { ConfirmButton } from './Confirm';

const ACTION_LABELS: Record<string, string> = {
  Publish: 'Publish',
  'Deploy as a Prototype': 'Deploy as a prototype',
  'Demote to Created': 'Demote to created',
  Block: 'Block',
  Deprecate: 'Deprecate',
  Retire: 'Retire',
  'Re-Publish': 'Re-publish',
};

/** What a confirmed action does to subscribers, said before it happens. */
const CONSEQUENCES: Record<string, string> = {
  Deprecate:
    'Existing subscriptions keep working and the API stays in the Developer Portal, but no application can subscribe to it any more.',
  Retire:
    'The gateway stops serving the API and it leaves the Developer Portal: every subscriber loses access. There is no way back from Retired.',
  Block: 'The gateway refuses every call to the API (403 api_blocked) until it is re-published.',
};

export function Lifecycle({ id, onChanged, canPublish }: { id: string; onChanged: () => void; canPublish: boolean }) {
  const lc = useLoad(() => publisher.lifecycle(id), [id]);
  const [error, setError] = useState<string | null>(null);
  const change = async (action: string) => {
    await publisher.changeLifecycle(id, action as LifecycleAction);
    lc.reload();
    onChanged();
  };
  const act = async (action: string) => {
    setError(null);
    try {
      await change(action);
    } catch (e) {
      setError(errorText(e));
    }
  };
  return (
    <Loading error={lc.error} loading={lc.loading && !lc.data}>
      {lc.data && (
        <Stack maw={720}>
          <Group>
            <Text>Current state:</Text>
            <StateBadge state={lc.data.state} />
          </Group>
          <Group>
            {lc.data.availableTransitions.map((a) =>
              CONSEQUENCES[a] ? (
                <ConfirmButton
                  key={a}
                  variant="default"
                  label={ACTION_LABELS[a] ?? a}
                  title={`${ACTION_LABELS[a] ?? a} this API?`}
                  disabled={!canPublish}
                  onConfirm={() => change(a)}
                >
                  {CONSEQUENCES[a]}
                </ConfirmButton>
              ) : (
                <Button key={a} variant={a === 'Publish' ? 'filled' : 'default'} onClick={() => void act(a)} disabled={!canPublish}>
                  {ACTION_LABELS[a] ?? a}
                </Button>
              ),
            )}
            {lc.data.availableTransitions.length === 0 && <Text c="dimmed">No action is allowed from here.</Text>}
          </Group>
          <ErrorNote error={error} />
        </Stack>
      )}
    </Loading>
  );
}

/** "Delete API": the dialog lists the API's subscriptions first; with any, deleting is
 * refused until their applications unsubscribe. */
export function DeleteApi({ api }: { api: Api }) {
  // Read afresh each time the dialog opens (0: not opened yet).
  const [opened, setOpened] = useState(0);
  const subs = useLoad(() => (opened ? publisher.subscriptions(api.id) : Promise.resolve(null)), [api.id, opened]);
  const list = subs.data?.list ?? [];
  // The dialog lists the first page; the count is of them all.
  const total = (subs.data as { pagination?: { total: number } } | null)?.pagination?.total ?? list.length;
  return (
    <ConfirmButton
      variant="light"
      color="red"
      label="Delete API"
      title={`Delete ${api.name} ${api.version}?`}
      blocked={subs.loading || !!subs.error || list.length > 0}
      onOpen={() => setOpened((n) => n + 1)}
      onConfirm={async () => {
        await publisher.deleteApi(api.id);
        navigate('/publisher');
      }}
    >
      <Loading error={subs.error} loading={subs.loading}>
        {list.length === 0 ? (
          <Text>No application subscribes to it. Deleting removes the API and its documents; this cannot be undone.</Text>
        ) : (
          <Stack gap="xs">
            <Text>
              {total} subscription{total === 1 ? '' : 's'}
              {total > list.length ? ` (the first ${list.length} below)` : ''}: the API can be deleted once {total === 1 ? 'it is' : 'they are'} removed
              (retire the API first so no new ones are made).
            </Text>
            <List aria-label="Subscriptions of the API" size="sm">
              {list.map((s) => (
                <List.Item key={s.id}>
                  {s.applicationName ?? s.applicationId} · {s.throttlingPolicy} · {s.status}
                </List.Item>
              ))}
            </List>
          </Stack>
        )}
      </Loading>
    </ConfirmButton>
  );
}
