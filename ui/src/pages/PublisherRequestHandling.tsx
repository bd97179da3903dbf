// The Publisher's editor for how the gateway reads an API's requests before routing them:
// the request-path options (docs/security.md, "Request paths": `;` parameters refused or
// stripped, templates matched case-sensitively or not) and request buffering
// (docs/operations.md: the body read at the gateway before an upstream connection is
// taken). Saves with a JSON Merge Patch of the two fields; the control plane checks them
// by compiling the API.
import { useState } from 'react';
import { Button, Card, Group, SegmentedControl, Stack, Switch, Text, TextInput } from '@mantine/core';
import type { Api } from '../api/types';
import { quantity } from '../lib/units';
import { useSave } from './PublisherPolicies';

interface Paths {
  matrix_parameters?: 'refuse' | 'strip';
  case_insensitive?: boolean;
}

interface RequestBuffering {
  enabled?: boolean;
  size?: number | string;
  timeout?: number | string;
}

type WithRequestOptions = Api & { paths?: Paths | null; requestBuffering?: RequestBuffering | null };


export function RequestHandlingEditor({ api, onSaved, canEdit }: { api: Api; onSaved: () => void; canEdit: boolean }) {
  const start = api as WithRequestOptions;
  const [matrix, setMatrix] = useState<'refuse' | 'strip'>(start.paths?.matrix_parameters ?? 'refuse');
  const [anyCase, setAnyCase] = useState(start.paths?.case_insensitive ?? false);
  const [buffering, setBuffering] = useState(start.requestBuffering?.enabled ?? true);
  const [size, setSize] = useState(String(start.requestBuffering?.size ?? ''));
  const [timeout, setTimeout_] = useState(String(start.requestBuffering?.timeout ?? ''));
  const { save, note } = useSave(api.id, onSaved);

  const submit = () => {
    const paths: Paths = { matrix_parameters: matrix, case_insensitive: anyCase };
    const requestBuffering: RequestBuffering = { enabled: buffering };
    const s = quantity(size);
    const t = quantity(timeout);
    if (s !== undefined) requestBuffering.size = s;
    if (t !== undefined) requestBuffering.timeout = t;
    void save({ paths, requestBuffering });
  };

  return (
    <Card withBorder maw={720}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          submit();
        }}
      >
        <Stack>
          <Text fw={600}>Request paths</Text>
          <Text size="sm" c="dimmed">
            A <code>;</code> in a path (<code>/admin;jsessionid=x/users</code>) is refused by default: servlet back ends
            drop it and would serve a resource the gateway's rules never judged. Strip it only for back ends that need
            matrix parameters; the back end then gets the path the gateway judged.
          </Text>
          <div>
            <Text size="sm" fw={500} id="matrix-label">
              Path parameters (<code>;</code>)
            </Text>
            <SegmentedControl
              aria-labelledby="matrix-label"
              value={matrix}
              onChange={(v) => setMatrix(v === 'strip' ? 'strip' : 'refuse')}
              disabled={!canEdit}
              data={[
                { value: 'refuse', label: 'Refuse (400)' },
                { value: 'strip', label: 'Strip before routing' },
              ]}
            />
          </div>
          <Switch
            label="Case-insensitive paths"
            description="Templates match in any letter case and the path is forwarded in lower case (IIS back ends)"
            checked={anyCase}
            onChange={(e) => setAnyCase(e.currentTarget.checked)}
            disabled={!canEdit}
          />
          <Text fw={600}>Request bodies</Text>
          <Switch
            label="Request buffering"
            description="Read the body at the gateway before connecting upstream, so a slow client holds no back-end connection"
            checked={buffering}
            onChange={(e) => setBuffering(e.currentTarget.checked)}
            disabled={!canEdit}
          />
          <TextInput label="Buffer size" description="Bytes read before connecting, e.g. 256KiB (default 1MiB)" value={size} onChange={(e) => setSize(e.currentTarget.value)} disabled={!canEdit || !buffering} />
          <TextInput label="Body timeout" description="Time the client gets to send them, e.g. 20s (default 30s); later: 408" value={timeout} onChange={(e) => setTimeout_(e.currentTarget.value)} disabled={!canEdit || !buffering} />
          {note}
          {canEdit && (
            <Group justify="flex-end">
              <Button type="submit">Save request handling</Button>
            </Group>
          )}
        </Stack>
      </form>
    </Card>
  );
}
