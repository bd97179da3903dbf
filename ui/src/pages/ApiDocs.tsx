// The Developer Portal's documents of an API: the publisher's markdown, rendered
// (read-only), one at a time; nothing at all when the API has none.
import { useState } from 'react';
import { Card, Group, NavLink, Stack, Title } from '@mantine/core';
import { devportal } from '../api/calls';
import { useLoad } from '../lib/load';
import { Markdown } from '../lib/markdown';
import { ErrorNote } from './common';

export function ApiDocs({ apiId }: { apiId: string }) {
  const docs = useLoad(() => devportal.documents(apiId), [apiId]);
  const [chosen, setChosen] = useState<string | null>(null);
  const list = docs.data?.list ?? [];
  const doc = list.find((d) => d.id === chosen) ?? list[0];
  if (docs.error) return <ErrorNote error={`Documents: ${docs.error}`} />;
  if (!doc) return null;
  return (
    <Card withBorder component="section" aria-label="Documents">
      <Title order={3} mb="sm">
        Documents
      </Title>
      <Group align="flex-start" wrap="nowrap">
        {list.length > 1 && (
          <Stack gap={0} w={220} aria-label="Document list" role="navigation">
            {list.map((d) => (
              <NavLink key={d.id} label={d.name} description={d.summary} active={d.id === doc.id} onClick={() => setChosen(d.id)} />
            ))}
          </Stack>
        )}
        <Stack gap={0} style={{ flex: 1, minWidth: 0 }}>
          <Title order={4}>{doc.name}</Title>
          <Markdown source={doc.content} label={`Document ${doc.name}`} />
        </Stack>
      </Group>
    </Card>
  );
}
