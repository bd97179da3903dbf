// The typed REST client: openapi-fetch over the types generated from the control
// plane's OpenAPI document (schema.d.ts, `npm run gen:api`), with the signed-in user's
// bearer token on every call, and one error type for the control plane's error body.
import createClient, { type Middleware } from 'openapi-fetch';
import { accessToken } from '../auth';
import type { paths } from './schema';

export const api = createClient<paths>({ baseUrl: '' });

const auth: Middleware = {
  async onRequest({ request }) {
    const t = await accessToken();
    if (t) request.headers.set('Authorization', `Bearer ${t}`);
    return request;
  },
};
api.use(auth);

/** The control plane's `{code, message, request_id}` error body, with field errors. */
export class ApiFailure extends Error {
  constructor(
    public status: number,
    public code: string,
    message: string,
  ) {
    super(message);
  }
}

interface ErrorBody {
  code?: string;
  message?: string;
  errors?: { field: string; message: string }[];
}

/** Unwraps an openapi-fetch result: the data, typed by the document's success schema, or
 * an ApiFailure with the server's words. */
export function must<T>(r: { data?: T; error?: unknown; response: Response }): T {
  if (r.error !== undefined || !r.response.ok) {
    const e = (r.error ?? {}) as ErrorBody;
    const fields = e.errors?.map((f) => `${f.field}: ${f.message}`).join('; ');
    throw new ApiFailure(
      r.response.status,
      e.code ?? 'error',
      [e.message ?? `HTTP ${r.response.status}`, fields].filter(Boolean).join(' — '),
    );
  }
  // A success without a body (204) has no data: callers of such operations ignore it.
  return r.data as T;
}
