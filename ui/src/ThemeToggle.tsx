// The light/dark switch in every header.
import { ActionIcon, useMantineColorScheme } from '@mantine/core';

export function ThemeToggle() {
  const { colorScheme, setColorScheme } = useMantineColorScheme();
  const dark = colorScheme === 'dark';
  return (
    <ActionIcon
      variant="default"
      size="lg"
      aria-label={dark ? 'Use light colours' : 'Use dark colours'}
      onClick={() => setColorScheme(dark ? 'light' : 'dark')}
    >
      {dark ? '☀' : '☾'}
    </ActionIcon>
  );
}
