// Reads the operations out of an API's OpenAPI (3.x) or Swagger (2.0) document for the
// Developer Portal's API page and the try-it console: method, path, summary,
// parameters, whether a body is expected and a body to start from (the document's
// example, else a skeleton built from the schema). Tolerant: a malformed document yields
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
  /** The request body to pre-fill try-it with: the example, else a schema skeleton. */
  bodyExample?: string;
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
        bodyExample: bodyExample(doc, op, item.parameters),
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

/** Follows a local `$ref` (`#/components/schemas/X`, `#/definitions/X`). */
function deref(doc: unknown, v: unknown, seen: Set<string>): Obj {
  let o = obj(v);
  while (typeof o.$ref === 'string') {
    const ref = o.$ref;
    if (!ref.startsWith('#/') || seen.has(ref)) return {};
    seen.add(ref);
    o = ref
      .slice(2)
      .split('/')
      .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
      .reduce<Obj>((at, key) => obj(at[key]), obj(doc));
  }
  return o;
}

/** A value of `schema`'s shape: its example or default, else a placeholder per type.
 * `seen` stops recursive schemas; depth caps deep ones. */
export function skeleton(doc: unknown, schema: unknown, seen = new Set<string>(), depth = 0): unknown {
  if (depth > 8) return null;
  const s = deref(doc, schema, new Set(seen));
  const ref = obj(schema).$ref;
  const inner = typeof ref === 'string' ? new Set([...seen, ref]) : seen;
  if (typeof ref === 'string' && seen.has(ref)) return {};
  if ('example' in s) return s.example;
  if ('default' in s) return s.default;
  if (Array.isArray(s.enum) && s.enum.length) return s.enum[0];
  const all = Array.isArray(s.allOf) ? s.allOf : [];
  if (all.length) {
    return Object.assign({}, ...all.map((p) => obj(skeleton(doc, p, inner, depth + 1))));
  }
  const alt = [s.oneOf, s.anyOf].find((a) => Array.isArray(a) && a.length) as unknown[] | undefined;
  if (alt) return skeleton(doc, alt[0], inner, depth + 1);
  const type = Array.isArray(s.type) ? s.type.find((t) => t !== 'null') : s.type;
  if (type === 'object' || (!type && s.properties)) {
    const out: Obj = {};
    for (const [k, v] of Object.entries(obj(s.properties))) out[k] = skeleton(doc, v, inner, depth + 1);
    return out;
  }
  if (type === 'array') return [skeleton(doc, s.items, inner, depth + 1)];
  if (type === 'integer' || type === 'number') return typeof s.minimum === 'number' ? s.minimum : 0;
  if (type === 'boolean') return false;
  if (type === 'string') {
    const formats: Record<string, string> = { 'date-time': new Date(0).toISOString(), date: '1970-01-01', email: 'user@example.com', uuid: '00000000-0000-0000-0000-000000000000', uri: 'https://example.com' };
    return formats[str(s.format) ?? ''] ?? 'string';
  }
  return null;
}

/** The JSON media type of a `content` map: `application/json` or any `+json`. */
function jsonMedia(content: Obj): Obj | undefined {
  const key = Object.keys(content).find((k) => k === 'application/json') ?? Object.keys(content).find((k) => /[/+]json\b/.test(k));
  return key ? obj(content[key]) : Object.values(content).map(obj)[0];
}

/** The body try-it starts with: the media type's example (or first of `examples`), the
 * schema's example, else a skeleton of the schema. Swagger 2.0 reads the `body` parameter. */
export function bodyExample(doc: unknown, op: Obj, shared?: unknown): string | undefined {
  let media: Obj | undefined;
  const rb = deref(doc, op.requestBody, new Set());
  if (Object.keys(rb).length) media = jsonMedia(obj(rb.content));
  else {
    const raw = [...(Array.isArray(op.parameters) ? op.parameters : []), ...(Array.isArray(shared) ? shared : [])];
    const body = raw.map((p) => deref(doc, p, new Set())).find((p) => p.in === 'body');
    if (body) media = { schema: body.schema };
  }
  if (!media) return undefined;
  let value: unknown = media.example;
  if (value === undefined && Object.keys(obj(media.examples)).length) {
    value = deref(doc, Object.values(obj(media.examples))[0], new Set()).value;
  }
  if (value === undefined) value = skeleton(doc, media.schema);
  if (value === undefined || value === null) return undefined;
  return typeof value === 'string' ? value : JSON.stringify(value, null, 2);
}
