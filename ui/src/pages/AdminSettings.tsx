// The Admin console's portal settings: self sign-up (on/off, with or without approval)
// and anonymous browsing of the Developer Portal's catalogue. Each switch saves at once.
import { Card, Stack, Switch, Text, Title } from '@mantine/core';
import { useState } from 'react';
import { admin, type DevportalSettings, type SignupSettings } from '../api/calls';
import { errorText, useLoad } from '../lib/load';
import { ErrorNote, Loading } from './common';

export function Settings() {
  const signup = useLoad(() => admin.signupSettings(), []);
  const portal = useLoad(() => admin.devportalSettings(), []);
  const [error, setError] = useState<string | null>(null);
  const save = async (f: () => Promise<unknown>, reload: () => void) => {
    setError(null);
    try {
      await f();
    } catch (e) {
      setError(errorText(e));
    }
    reload();
  };
  const setSignup = (s: SignupSettings) => save(() => admin.setSignupSettings(s), signup.reload);
  const setPortal = (s: DevportalSettings) => save(() => admin.setDevportalSettings(s), portal.reload);
  return (
    <Stack maw={620}>
      <Title order={2}>Settings</Title>
      <Loading error={signup.error ?? portal.error} loading={!signup.data || !portal.data}>
        {signup.data && portal.data && (
          <Card withBorder>
            <Stack>
              <Switch
                label="Self sign-up"
                description="Anyone may create a subscriber account from the Developer Portal."
                checked={signup.data.enabled}
                onChange={(e) => void setSignup({ ...signup.data!, enabled: e.currentTarget.checked })}
              />
              <Switch
                label="New accounts need approval"
                description="Signed-up accounts wait (PENDING) until an admin sets them ACTIVE under Users."
                checked={signup.data.approval}
                disabled={!signup.data.enabled}
                onChange={(e) => void setSignup({ ...signup.data!, approval: e.currentTarget.checked })}
              />
              <Switch
                label="Anonymous browsing"
                description="Visitors who have not signed in may browse the published APIs."
                checked={portal.data.anonymousBrowsing}
                onChange={(e) => void setPortal({ anonymousBrowsing: e.currentTarget.checked })}
              />
              <Text size="xs" c="dimmed">
                Changes apply at once.
              </Text>
            </Stack>
          </Card>
        )}
      </Loading>
      <ErrorNote error={error} />
    </Stack>
  );
}
