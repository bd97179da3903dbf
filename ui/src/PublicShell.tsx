// What someone who has not signed in sees: the Developer Portal's public catalogue
// (while an admin keeps anonymous browsing on) and the sign-up page, under a header
// with "Sign up" (while self sign-up is on) and "Sign in".
import { AppShell, Button, Group, Title } from '@mantine/core';
import { publicSettings } from './api/calls';
import { login } from './auth';
import { useLoad } from './lib/load';
import { Link } from './router';
import { ThemeToggle } from './ThemeToggle';
import { DevPortalPage } from './pages/DevPortal';
import { SignUpPage } from './pages/SignUp';

export function PublicShell({ path, search }: { path: string; search: string }) {
  const settings = useLoad(() => publicSettings(), []);
  return (
    <AppShell header={{ height: 56 }} padding="md">
      <AppShell.Header>
        <Group h="100%" px="md" justify="space-between" wrap="nowrap">
          <Group gap="lg" wrap="nowrap">
            <Link href="/devportal" style={{ color: 'inherit', textDecoration: 'none' }}>
              <Title order={3} component="span">
                Turnpike
              </Title>
            </Link>
            <Button component={Link} href="/devportal" variant={path === '/signup' ? 'subtle' : 'light'} visibleFrom="sm">
              Developer Portal
            </Button>
          </Group>
          <Group gap="sm" wrap="nowrap">
            <ThemeToggle />
            {settings.data?.selfSignup && (
              <Button component={Link} href="/signup" variant="default">
                Sign up
              </Button>
            )}
            <Button onClick={() => void login(path === '/signup' ? '/devportal' : path + search)}>Sign in</Button>
          </Group>
        </Group>
      </AppShell.Header>
      <AppShell.Main>{path === '/signup' ? <SignUpPage /> : <DevPortalPage path={path} user={null} />}</AppShell.Main>
    </AppShell>
  );
}
