// The shell: sign-in (every path but /callback, /signup and, while anonymous browsing
// is on, the Developer Portal's catalogue needs a user), the header with the portals the
// user's scopes open, light/dark switch and sign-out, and the page.
import { useEffect, useState } from 'react';
import { useDisclosure } from '@mantine/hooks';
import {
  Alert,
  AppShell,
  Burger,
  Button,
  Center,
  Group,
  Loader,
  NavLink,
  Text,
  Stack,
  Title,
} from '@mantine/core';
import { completeLogin, currentUser, login, logout, signedInBefore, type User } from './auth';
import { publicSettings } from './api/calls';
import { PublicShell } from './PublicShell';
import { ThemeToggle } from './ThemeToggle';
import { Link, navigate, useRoute } from './router';
import type { Portal } from './lib/jwt';
import { PublisherPage, publisherNav } from './pages/Publisher';
import { DevPortalPage, devportalNav } from './pages/DevPortal';
import { AdminPage, adminNav } from './pages/Admin';

const PORTALS: { id: Portal; label: string; home: string }[] = [
  { id: 'publisher', label: 'Publisher', home: '/publisher' },
  { id: 'devportal', label: 'Developer Portal', home: '/devportal' },
  { id: 'admin', label: 'Admin', home: '/admin' },
];

export interface NavItem {
  href: string;
  label: string;
}

function portalOf(path: string): Portal | null {
  const first = path.split('/')[1];
  return PORTALS.some((p) => p.id === first) ? (first as Portal) : null;
}

/** The catalogue's pages, which anonymous callers may browse while an admin allows it. */
function isCatalogue(path: string): boolean {
  return path === '/devportal' || path.startsWith('/devportal/apis/');
}

type Catalogue = 'unknown' | 'open' | 'closed';

function useSignedIn(): { user: User | null; error: string | null; anonymous: boolean } {
  const { path, search } = useRoute();
  const [user, setUser] = useState<User | null>(currentUser());
  const [error, setError] = useState<string | null>(null);
  const [catalogue, setCatalogue] = useState<Catalogue>('unknown');
  // A tab that signed in before goes back through /oauth2/authorize (silent while the
  // session cookie lives) rather than showing the public view.
  const browsing = !user && isCatalogue(path) && !signedInBefore();
  useEffect(() => {
    if (user) return;
    if (path === '/callback') {
      completeLogin(search)
        .then((to) => {
          setUser(currentUser());
          navigate(to, true);
        })
        .catch((e: Error) => setError(e.message));
      return;
    }
    if (path === '/signup') return;
    if (browsing && catalogue === 'unknown') {
      publicSettings()
        .then((p) => setCatalogue(p.anonymousBrowsing ? 'open' : 'closed'))
        .catch(() => setCatalogue('closed'));
      return;
    }
    if (browsing && catalogue === 'open') return;
    void login(path + search);
  }, [path, search, user, browsing, catalogue]);
  const anonymous = !user && (path === '/signup' || (browsing && catalogue === 'open'));
  return { user, error, anonymous };
}

export function App() {
  const { user, error, anonymous } = useSignedIn();
  const { path, search } = useRoute();
  const [navOpen, nav_] = useDisclosure(false);
  useEffect(() => nav_.close(), [path]); // eslint-disable-line react-hooks/exhaustive-deps
  if (error)
    return (
      <Center h="100vh">
        <Alert color="red" title="Sign-in failed" maw={480}>
          {error}{' '}
          <Button variant="subtle" onClick={() => void login('/', 'login')}>
            Sign in again
          </Button>
        </Alert>
      </Center>
    );
  if (!user && anonymous) return <PublicShell path={path} search={search} />;
  if (!user)
    return (
      <Center h="100vh">
        <Loader aria-label="Signing in" />
      </Center>
    );
  const allowed = PORTALS.filter((p) => user.portals.includes(p.id));
  const current = portalOf(path);
  if (!current || !user.portals.includes(current)) {
    const home = allowed[0]?.home;
    if (home && path !== home) {
      queueMicrotask(() => navigate(home, true));
    }
    if (!home)
      return (
        <Center h="100vh">
          <Text>Your account has no role that opens a portal.</Text>
        </Center>
      );
    return null;
  }
  const nav: NavItem[] =
    current === 'publisher' ? publisherNav : current === 'devportal' ? devportalNav : adminNav;
  return (
    <AppShell
      header={{ height: 56 }}
      navbar={{ width: 220, breakpoint: 'sm', collapsed: { mobile: !navOpen } }}
      padding="md"
    >
      <AppShell.Header>
        <Group h="100%" px="md" justify="space-between" wrap="nowrap">
          <Group gap="lg" wrap="nowrap">
            <Burger opened={navOpen} onClick={nav_.toggle} hiddenFrom="sm" size="sm" aria-label="Sections" />
            <Title order={3} component="span">
              Turnpike
            </Title>
            <Group gap={4} component="nav" aria-label="Portals" wrap="nowrap" visibleFrom="sm">
              {allowed.map((p) => (
                <Button
                  key={p.id}
                  component={Link}
                  href={p.home}
                  variant={p.id === current ? 'light' : 'subtle'}
                  aria-current={p.id === current ? 'page' : undefined}
                >
                  {p.label}
                </Button>
              ))}
            </Group>
          </Group>
          <Group gap="sm" wrap="nowrap">
            <Text size="sm" c="dimmed" visibleFrom="sm">
              {user.name}
            </Text>
            <ThemeToggle />
            <Button variant="default" onClick={() => void logout()}>
              Sign out
            </Button>
          </Group>
        </Group>
      </AppShell.Header>
      <AppShell.Navbar p="xs" aria-label="Sections">
        {/* Narrow screens: the portals move from the header into the menu. */}
        <Stack gap={0} hiddenFrom="sm" mb="xs" component="nav" aria-label="Portals menu">
          {allowed.map((p) => (
            <NavLink key={p.id} component={Link} href={p.home} label={p.label} active={p.id === current} variant="filled" />
          ))}
        </Stack>
        {nav.map((n) => (
          <NavLink
            key={n.href}
            component={Link}
            href={n.href}
            label={n.label}
            active={path === n.href || (n.href !== `/${current}` && path.startsWith(n.href))}
          />
        ))}
      </AppShell.Navbar>
      <AppShell.Main>
        {current === 'publisher' && <PublisherPage path={path} user={user} />}
        {current === 'devportal' && <DevPortalPage path={path} user={user} />}
        {current === 'admin' && <AdminPage path={path} />}
      </AppShell.Main>
    </AppShell>
  );
}
