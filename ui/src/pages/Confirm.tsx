// A button that asks before it acts: a dialog naming what will happen, Cancel and the
// action again (for what a user cannot undo in one click: lifecycle changes that cut
// subscribers off, deleting an API or a document).
import { useState, type ReactNode } from 'react';
import { Button, Group, Modal, Stack, Text, type ButtonProps } from '@mantine/core';
import { errorText } from '../lib/load';
import { ErrorNote } from './common';

interface Props extends ButtonProps {
  /** The button's text, the dialog's confirm button and (with `title`) its title. */
  label: string;
  title?: string;
  /** What will happen, in the dialog. */
  children: ReactNode;
  onConfirm: () => Promise<void>;
  confirmColor?: string;
  /** Why the action cannot be confirmed now (the confirm button is disabled). */
  blocked?: boolean;
  'aria-label'?: string;
}

export function ConfirmButton({ label, title, children, onConfirm, confirmColor = 'red', blocked, ...button }: Props) {
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const confirm = async () => {
    setBusy(true);
    setError(null);
    try {
      await onConfirm();
      setOpen(false);
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <Button {...button} onClick={() => (setError(null), setOpen(true))}>
        {label}
      </Button>
      <Modal opened={open} onClose={() => setOpen(false)} title={title ?? `${label}?`}>
        <Stack>
          {typeof children === 'string' ? <Text>{children}</Text> : children}
          <ErrorNote error={error} />
          <Group justify="flex-end">
            <Button variant="default" onClick={() => setOpen(false)}>
              Cancel
            </Button>
            <Button color={confirmColor} loading={busy} disabled={blocked} onClick={() => void confirm()}>
              {label}
            </Button>
          </Group>
        </Stack>
      </Modal>
    </>
  );
}
