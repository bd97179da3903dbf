// The dashboards, loaded when first shown (the charts library is not in the other pages'
// JavaScript).
import { lazy, Suspense } from 'react';
import { Center, Loader } from '@mantine/core';
import type { AnalyticsScope } from '../api/analytics';

const Dashboards = lazy(() => import('./Dashboards'));

export function LazyDashboards({ scope, title }: { scope: AnalyticsScope; title: string }) {
  return (
    <Suspense
      fallback={
        <Center p="xl">
          <Loader aria-label="Loading" />
        </Center>
      }
    >
      <Dashboards scope={scope} title={title} />
    </Suspense>
  );
}
