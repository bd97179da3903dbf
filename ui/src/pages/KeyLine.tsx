// A secret or id on one line with a Copy button (keys shown once).
import { Button, Code, CopyButton, Group, Text } from '@mantine/core';

export function KeyLine({ label, value }: { label: string; value: string }) {
  return (
    <Group gap="xs" wrap="nowrap">
      <Text size="sm" w={130}>
        {label}
      </Text>
      <Code style={{ wordBreak: 'break-all' }} data-testid={label}>
        {value}
      </Code>
      <CopyButton value={value}>
        {({ copied, copy }) => (
          <Button size="xs" variant="default" onClick={copy}>
            {copied ? 'Copied' : 'Copy'}
          </Button>
        )}
      </CopyButton>
    </Group>
  );
}
