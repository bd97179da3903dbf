// The Publisher's "MCP server" tab (docs/mcp.md "Portals"): expose the API to AI agents as
// an MCP server at /mcp{context}/{version}. The control plane lists every operation as the
// tool the gateway would serve (GET /apis/{id}/mcp-tools: its name, description and input
// schema, computed by the gateway's own compile); the publisher selects, renames and
// describes them, and saves the `mcp:` section with a JSON Merge Patch. The section's
// other fields (sessions, per-tool settings other editors add) are kept as they were.
import { useState } from 'react';
import { Alert, Badge, Button, Card, Checkbox, Code, Group, Stack, Switch, Table, Text, TextInput, Textarea } from '@mantine/core';
import { publisher } from '../api/calls';
import type { Api, McpToolCandidate, McpTools } from '../api/types';
import { useLoad } from '../lib/load';
import { sectionFrom, type Section, type ToolRow } from '../lib/mcpSection';
import { Loading } from './common';
import { useSave } from './PublisherPolicies';

const SOURCES: Record<string, string> = {
  openapi: "the API's OpenAPI document",
  resources: "the API's resources",
  upstream: 'the remote MCP server (its tools are listed by it)',
};

const row = (c: McpToolCandidate): ToolRow => ({
  operation: c.operation,
  selected: c.selected,
  name: c.tool.name,
  description: c.tool.description ?? '',
  defaultName: c.defaultName,
  defaultDescription: c.defaultDescription,
});

export function McpEditor({ api, onSaved, canEdit }: { api: Api; onSaved: () => void; canEdit: boolean }) {
  // Reloaded with each revision: a save shows what the gateway now serves. The form
  // waits for the fresh list (never mounts on the previous one); the save's note stays.
  const tools = useLoad(() => publisher.mcpTools(api.id), [api.id, api.revision]);
  const { save, note } = useSave(api.id, onSaved);
  return (
    <Stack>
      <Loading error={tools.error} loading={tools.loading}>
        {tools.data && <McpForm key={api.revision} api={api} preview={tools.data} canEdit={canEdit} save={save} />}
      </Loading>
      {note}
    </Stack>
  );
}

function McpForm({
  api,
  preview,
  save,
  canEdit,
}: {
  api: Api;
  preview: McpTools;
  save: (patch: Record<string, unknown>) => Promise<void>;
  canEdit: boolean;
}) {
  const existing = (api as Api & { mcp?: Section | null }).mcp ?? null;
  const [expose, setExpose] = useState(preview.exposed);
  const [rows, setRows] = useState<ToolRow[]>(preview.tools.map(row));
  const set = (i: number, r: Partial<ToolRow>) => setRows(rows.map((x, j) => (j === i ? { ...x, ...r } : x)));
  const submit = () => void save({ mcp: expose ? sectionFrom(existing, rows, preview.openapi) : null });
  const served = rows.filter((r) => r.selected).length;
  return (
    <Card withBorder>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          submit();
        }}
      >
        <Stack>
          <Group justify="space-between">
            <Switch
              label="Expose as MCP server"
              description="AI agents list the selected operations as tools and call them through this API's chain (credentials, subscriptions, limits)"
              checked={expose}
              onChange={(e) => setExpose(e.currentTarget.checked)}
              disabled={!canEdit}
            />
            <Badge color={preview.exposed ? 'green' : 'gray'} variant="light">
              {preview.exposed ? 'MCP server' : 'Not exposed'}
            </Badge>
          </Group>
          <Text size="sm">
            Endpoint on the gateway: <Code>{preview.endpoint}</Code> · tools made from{' '}
            {SOURCES[preview.source] ?? preview.source} · {served} of {rows.length} served
          </Text>
          {preview.problems.length > 0 && (
            <Alert color="orange" title="The gateway would refuse this section" role="alert">
              {preview.problems.map((p, i) => (
                <div key={i}>
                  <Code>{p.field}</Code>: {p.message}
                </div>
              ))}
            </Alert>
          )}
          <ToolTable rows={rows} candidates={preview.tools} set={set} disabled={!canEdit || !expose} />
          {canEdit && (
            <Group>
              <Button type="submit">Save MCP server</Button>
            </Group>
          )}
        </Stack>
      </form>
    </Card>
  );
}

function ToolTable({
  rows,
  candidates,
  set,
  disabled,
}: {
  rows: ToolRow[];
  candidates: McpToolCandidate[];
  set: (i: number, r: Partial<ToolRow>) => void;
  disabled: boolean;
}) {
  return (
    <Table aria-label="MCP tools" verticalSpacing="sm">
      <Table.Thead>
        <Table.Tr>
          <Table.Th>Serve</Table.Th>
          <Table.Th>Operation</Table.Th>
          <Table.Th>Tool</Table.Th>
          <Table.Th>Input schema</Table.Th>
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {rows.map((r, i) => (
          <Table.Tr key={r.operation}>
            <Table.Td>
              <Checkbox aria-label={`Serve ${r.operation}`} checked={r.selected} onChange={(e) => set(i, { selected: e.currentTarget.checked })} disabled={disabled} />
            </Table.Td>
            <Table.Td>
              <Code>
                {candidates[i]?.method} {candidates[i]?.path}
              </Code>
            </Table.Td>
            <Table.Td miw={280}>
              <Stack gap={4}>
                <TextInput aria-label={`Tool name of ${r.operation}`} value={r.name} onChange={(e) => set(i, { name: e.currentTarget.value })} disabled={disabled || !r.selected} />
                <Textarea
                  aria-label={`Tool description of ${r.operation}`}
                  autosize
                  minRows={1}
                  value={r.description}
                  onChange={(e) => set(i, { description: e.currentTarget.value })}
                  disabled={disabled || !r.selected}
                />
              </Stack>
            </Table.Td>
            <Table.Td>
              <details>
                <summary>{Object.keys((candidates[i]?.tool.inputSchema.properties ?? {}) as object).join(', ') || 'no arguments'}</summary>
                <Code block fz="xs" data-testid={`schema of ${r.operation}`}>
                  {JSON.stringify(candidates[i]?.tool.inputSchema, null, 2)}
                </Code>
              </details>
            </Table.Td>
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}
