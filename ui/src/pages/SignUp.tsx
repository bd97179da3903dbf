// Self sign-up (no credentials): name and password; the account is a subscriber,
// ACTIVE at once or PENDING until an admin approves it, as the admin's setting says.
// Refused with the server's words when self sign-up is off.
import { useState } from 'react';
import { Alert, Button, Card, PasswordInput, Stack, Text, TextInput, Title } from '@mantine/core';
import { signUp } from '../api/calls';
import { login } from '../auth';
import { errorText } from '../lib/load';
import { ErrorNote } from './common';

export function SignUpPage() {
  const [name, setName] = useState('');
  const [password, setPassword] = useState('');
  const [repeat, setRepeat] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [created, setCreated] = useState<{ name: string; status: string } | null>(null);
  const submit = async () => {
    setError(null);
    if (password !== repeat) {
      setError('The two passwords differ.');
      return;
    }
    try {
      setCreated(await signUp(name, password));
    } catch (e) {
      setError(errorText(e));
    }
  };
  if (created)
    return (
      <Card withBorder maw={460} mx="auto" mt="xl">
        {created.status === 'PENDING' ? (
          <Alert title="Account created" color="yellow">
            An admin must approve <b>{created.name}</b> before you can sign in.
          </Alert>
        ) : (
          <Stack>
            <Alert title="Account created" color="green">
              Welcome, {created.name}. Sign in to create applications and subscribe.
            </Alert>
            <Button onClick={() => void login('/devportal')}>Sign in</Button>
          </Stack>
        )}
      </Card>
    );
  return (
    <Card withBorder maw={460} mx="auto" mt="xl">
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void submit();
        }}
      >
        <Stack>
          <Title order={2}>Sign up</Title>
          <Text size="sm" c="dimmed">
            A subscriber account for the Developer Portal.
          </Text>
          <TextInput label="Username" value={name} onChange={(e) => setName(e.currentTarget.value)} required autoComplete="username" />
          <PasswordInput
            label="Password"
            description="At least 8 characters"
            value={password}
            onChange={(e) => setPassword(e.currentTarget.value)}
            required
            autoComplete="new-password"
          />
          <PasswordInput label="Repeat the password" value={repeat} onChange={(e) => setRepeat(e.currentTarget.value)} required autoComplete="new-password" />
          <Button type="submit">Create account</Button>
          <ErrorNote error={error} />
        </Stack>
      </form>
    </Card>
  );
}
