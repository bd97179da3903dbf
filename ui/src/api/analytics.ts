// The analytics API's reports for the dashboards: one call per report, for the whole
// platform (admin), one API (publisher) or one application (its owner).
import { api, must } from './client';

export type AnalyticsScope = { kind: 'admin' } | { kind: 'api'; apiId: string } | { kind: 'application'; applicationId: string };

export interface Window {
  from: number;
  to: number;
  interval: number;
}

/** Percentiles in µs; `null` when the block counts no request. */
export interface LatencyBlock {
  count: number;
  p50Us: number | null;
  p90Us: number | null;
  p95Us: number | null;
  p99Us: number | null;
}

export interface Counts {
  requests: number;
  errors: number;
  throttled: number;
  cacheHits: number;
  bytesIn: number;
  bytesOut: number;
}

interface Latency {
  total: LatencyBlock;
  gateway: LatencyBlock;
  backend: LatencyBlock;
}

export interface TopRow extends Counts {
  apiName?: string;
  apiContext?: string;
  apiVersion?: string;
  applicationId?: string;
  applicationName?: string;
  method?: string;
  resource?: string;
  /** `by=tool` and `by=tool_application`: the MCP tool. */
  tool?: string;
  latency?: Latency;
}

export type TopBy = 'api' | 'application' | 'resource' | 'tool' | 'tool_application';

/** One group of the `ai` report (tokens, cost, time to first token of AI API calls). */
export interface AiRow {
  requests: number;
  errors: number;
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
  totalTokens: number;
  costUsd: number;
  timeToFirstToken: { count: number; p50Us: number | null; p90Us: number | null; p99Us: number | null };
  provider?: string;
  model?: string;
  applicationId?: string;
  applicationName?: string;
  apiName?: string;
  apiContext?: string;
  apiVersion?: string;
}

export type AiBy = 'model' | 'application' | 'api';

type Report = 'summary' | 'traffic' | 'top' | 'errors' | 'throttling' | 'latency' | 'ai';

async function report(scope: AnalyticsScope, name: Report, w: Window, extra: Record<string, string> = {}): Promise<unknown> {
  const query = { from: w.from, to: w.to, interval: w.interval, ...extra } as never;
  switch (scope.kind) {
    case 'admin':
      return must(await api.GET('/api/am/admin/v1/analytics/{report}', { params: { path: { report: name }, query } }));
    case 'api':
      return must(
        await api.GET('/api/am/publisher/v1/apis/{apiId}/analytics/{report}', {
          params: { path: { apiId: scope.apiId, report: name }, query },
        }),
      );
    case 'application':
      return must(
        await api.GET('/api/am/devportal/v1/applications/{applicationId}/analytics/{report}', {
          params: { path: { applicationId: scope.applicationId, report: name }, query },
        }),
      );
  }
}

export const analytics = {
  async summary(s: AnalyticsScope, w: Window) {
    return (await report(s, 'summary', w)) as { totals: Counts; latency: Latency };
  },
  async traffic(s: AnalyticsScope, w: Window) {
    return (await report(s, 'traffic', w)) as { interval: number; points: (Counts & { timestamp: number })[] };
  },
  async latency(s: AnalyticsScope, w: Window) {
    return (await report(s, 'latency', w)) as Latency & {
      points: { timestamp: number; total: LatencyBlock; gateway: LatencyBlock; backend: LatencyBlock }[];
    };
  },
  async top(s: AnalyticsScope, w: Window, by: TopBy, limit?: number) {
    if (limit) return (await report(s, 'top', w, { by, limit: String(limit) })) as { list: TopRow[] };
    return (await report(s, 'top', w, { by })) as { list: TopRow[] };
  },
  async errors(s: AnalyticsScope, w: Window) {
    return (await report(s, 'errors', w)) as { list: { outcome: string; reason: string; statusClass: string; requests: number }[] };
  },
  async ai(s: AnalyticsScope, w: Window, by: AiBy) {
    return (await report(s, 'ai', w, { by })) as { totals: AiRow; groups: AiRow[]; unpricedModels: string[] };
  },
  async throttled(s: AnalyticsScope, w: Window) {
    return (await report(s, 'throttling', w)) as {
      list: { policy: string; apiContext: string; apiVersion: string; applicationId: string; applicationName: string; requests: number }[];
    };
  },
};
