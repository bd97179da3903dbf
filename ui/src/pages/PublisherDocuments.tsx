// The Publisher's Documents tab: an API's documents in markdown, written inline or taken
// from a file (.md or text), added, edited and deleted; the Developer Portal shows them
// rendered (ApiDocs.tsx).
import { useState } from 'react';
import { Button, Card, FileInput, Group, Modal, Stack, Table, Text, TextInput, Textarea } from '@mantine/core';
import { publisher, type ApiDocument } from '../api/calls';
import { errorText, useLoad } from '../lib/load';
import { Markdown } from '../lib/markdown';
import { ErrorNote, Loading } from './common';
import { ConfirmButton } from './Confirm';

/** The control plane's limit on a document's content (characters). */
const MAX_CONTENT = 1_000_000;

export function DocumentsEditor({ apiId, canEdit }: { apiId: string; canEdit: boolean }) {
  const docs = useLoad(() => publisher.documents(apiId), [apiId]);
  // null: closed; 'new': adding; a document: editing it.
  const [editing, setEditing] = useState<null | 'new' | ApiDocument>(null);
  return (
    <Stack maw={900}>
      {canEdit && (
        <Group>
          <Button onClick={() => setEditing('new')}>Add document</Button>
        </Group>
      )}
      <Loading error={docs.error} loading={docs.loading && !docs.data}>
        <Table aria-label="Documents">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Name</Table.Th>
              <Table.Th>Summary</Table.Th>
              <Table.Th />
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {docs.data?.list.map((d) => (
              <Table.Tr key={d.id}>
                <Table.Td>{d.name}</Table.Td>
                <Table.Td>{d.summary}</Table.Td>
                <Table.Td>
                  {canEdit && (
                    <Group gap={4} justify="flex-end" wrap="nowrap">
                      <Button size="xs" variant="light" onClick={() => setEditing(d)} aria-label={`Edit document ${d.name}`}>
                        Edit
                      </Button>
                      <ConfirmButton
                        size="xs"
                        variant="subtle"
                        color="red"
                        label="Delete"
                        title={`Delete the document "${d.name}"?`}
                        aria-label={`Delete document ${d.name}`}
                        onConfirm={async () => {
                          await publisher.deleteDocument(apiId, d.id);
                          docs.reload();
                        }}
                      >
                        Subscribers will no longer see it in the Developer Portal.
                      </ConfirmButton>
                    </Group>
                  )}
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
        {docs.data?.list.length === 0 && <Text c="dimmed">No document yet.</Text>}
      </Loading>
      <Modal
        opened={editing !== null}
        onClose={() => setEditing(null)}
        title={editing === 'new' ? 'Add a document' : `Edit ${editing?.name ?? ''}`}
        size="xl"
      >
        {editing !== null && (
          <DocumentForm
            apiId={apiId}
            current={editing === 'new' ? null : editing}
            onSaved={() => (setEditing(null), docs.reload())}
          />
        )}
      </Modal>
    </Stack>
  );
}

function DocumentForm({ apiId, current, onSaved }: { apiId: string; current: ApiDocument | null; onSaved: () => void }) {
  const [name, setName] = useState(current?.name ?? '');
  const [summary, setSummary] = useState(current?.summary ?? '');
  const [content, setContent] = useState(current?.content ?? '');
  const [preview, setPreview] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const fromFile = async (file: File | null) => {
    if (!file) return;
    setError(null);
    const text = await file.text();
    if (text.length > MAX_CONTENT) return setError(`${file.name} is over ${MAX_CONTENT.toLocaleString()} characters.`);
    setContent(text);
    if (!name) setName(file.name.replace(/\.(md|markdown|txt)$/i, ''));
  };
  const save = async () => {
    setError(null);
    try {
      const body = { name, summary, content };
      if (current) await publisher.updateDocument(apiId, current.id, body);
      else await publisher.createDocument(apiId, body);
      onSaved();
    } catch (e) {
      setError(errorText(e));
    }
  };
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        void save();
      }}
    >
      <Stack>
        <TextInput label="Document name" value={name} onChange={(e) => setName(e.currentTarget.value)} required />
        <TextInput label="Summary" value={summary} onChange={(e) => setSummary(e.currentTarget.value)} />
        <FileInput
          label="Markdown file"
          description="Optional: a .md or text file replaces the content below"
          placeholder="Choose a file"
          accept=".md,.markdown,.txt,text/markdown,text/plain"
          onChange={(f) => void fromFile(f)}
          clearable
        />
        <Group justify="space-between">
          <Text size="sm" fw={500}>
            Content (markdown)
          </Text>
          <Button size="xs" variant="subtle" onClick={() => setPreview(!preview)}>
            {preview ? 'Edit' : 'Preview'}
          </Button>
        </Group>
        {preview ? (
          <Card withBorder>
            <Markdown source={content} label="Preview" />
          </Card>
        ) : (
          <Textarea aria-label="Content" autosize minRows={10} maxRows={24} value={content} onChange={(e) => setContent(e.currentTarget.value)} />
        )}
        <ErrorNote error={error} />
        <Group justify="flex-end">
          <Button type="submit">Save document</Button>
        </Group>
      </Stack>
    </form>
  );
}
