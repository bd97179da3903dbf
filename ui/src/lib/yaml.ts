// JSON to block-style YAML for the Developer Portal's "Download YAML" of an API's OpenAPI
// document: the portal has the JSON already, and a YAML library for one button would
// weigh more than this. Strings that YAML would read as something else are quoted (as
// JSON strings, which YAML accepts).

const PLAIN = /^[A-Za-z_/.][A-Za-z0-9_ ./()-]*$/;
const RESERVED = /^(true|false|yes|no|on|off|null|y|n|~)$/i;

function scalar(v: unknown): string {
  if (typeof v === 'string') return PLAIN.test(v) && !RESERVED.test(v) && !v.endsWith(' ') ? v : JSON.stringify(v);
  if (v === null || v === undefined) return 'null';
  return String(v);
}

const isComplex = (v: unknown) =>
  v !== null && typeof v === 'object' && (Array.isArray(v) ? v.length > 0 : Object.keys(v).length > 0);

function emit(v: unknown, indent: string): string {
  if (Array.isArray(v)) {
    if (!v.length) return '[]';
    return v
      .map((item) => {
        if (!isComplex(item)) return `${indent}- ${emitFlat(item)}`;
        const body = emit(item, `${indent}  `);
        return `${indent}- ${body.slice(indent.length + 2)}`;
      })
      .join('\n');
  }
  if (v !== null && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>);
    if (!entries.length) return '{}';
    return entries
      .map(([k, item]) =>
        isComplex(item) ? `${indent}${scalar(k)}:\n${emit(item, `${indent}  `)}` : `${indent}${scalar(k)}: ${emitFlat(item)}`,
      )
      .join('\n');
  }
  return `${indent}${scalar(v)}`;
}

function emitFlat(v: unknown): string {
  if (Array.isArray(v)) return '[]';
  if (v !== null && typeof v === 'object') return '{}';
  return scalar(v);
}

export function toYaml(doc: unknown): string {
  return `${isComplex(doc) ? emit(doc, '') : emitFlat(doc)}\n`;
}
