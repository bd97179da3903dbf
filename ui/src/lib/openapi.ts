// Reads the operations out of an API's OpenAPI (3.x) or Swagger (2.0) document for the
// Developer Portal's API page and the try-it console: method, path, summary,
// parameters and whether a body is expected. Tolerant: a malformed document yields
// the operations it can read.

export interface Param {
  name: string;
  in: string;
  required: boolean;
  description?: string;
}

export interface Operation {
  method: string;
  path: string;
  summary?: string;
  description?: string;
  operationId?: string;
  params: Param[];
  hasBody: boolean;
  responses: { status: string; description?: string }[];
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete', 'head', 'options'];

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {});
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

function params(list: unknown): Param[] {
  return (Array.isArray(list) ? list : []).map(obj).flatMap((p) => {
    const name = str(p.name);
    const where = str(p.in);
    if (!name || !where) return [];
    return [{ name, in: where, required: p.required === true, description: str(p.description) }];
  });
}

export function operations(doc: unknown): Operation[] {
  const out: Operation[] = [];
  for (const [path, itemRaw] of Object.entries(obj(obj(doc).paths))) {
    const item = obj(itemRaw);
    const shared = params(item.parameters);
    for (const m of METHODS) {
      if (!(m in item)) continue;
      const op = obj(item[m]);
      const own = params(op.parameters);
      const merged = [...own, ...shared.filter((s) => !own.some((o) => o.name === s.name && o.in === s.in))];
      out.push({
        method: m.toUpperCase(),
        path,
        summary: str(op.summary),
        description: str(op.description),
        operationId: str(op.operationId),
        params: merged.filter((p) => p.in !== 'body'),
        hasBody: 'requestBody' in op || merged.some((p) => p.in === 'body'),
        responses: Object.entries(obj(op.responses)).map(([status, r]) => ({
          status,
          description: str(obj(r).description),
        })),
      });
    }
  }
  return out;
}

/** Fills `{name}` path templates and appends query parameters that have a value. */
export function buildPath(template: string, values: Record<string, string>, op?: Operation): string {
  const path = template.replace(/\{([^}]+)\}/g, (_, n: string) => encodeURIComponent(values[n] ?? ''));
  const q = new URLSearchParams();
  for (const p of op?.params ?? []) {
    if (p.in === 'query' && values[p.name]) q.set(p.name, values[p.name]);
  }
  const qs = q.toString();
  return qs ? `${path}?${qs}` : path;
}
