// The Publisher's "Expose as MCP server": the `mcp:` section written from the tool rows the
// publisher reviewed. Fields of the section and of its tool entries this editor does not
// know (other editors', e.g. per-tool scopes or limits) are kept as they were.

export interface ToolRow {
  /** What `tools[].operation` names: the operationId, or `METHOD /path`. */
  operation: string;
  selected: boolean;
  name: string;
  description: string;
  defaultName: string;
  defaultDescription: string;
}

type Entry = Record<string, unknown> & { operation: string; name?: string; description?: string };
export type Section = Record<string, unknown> & { openapi?: string; tools?: Entry[] };

/** The section to save. `openapi` is the document a first save puts in (the stored
 * section's own stays). Without `tools` every operation is served, also those a new
 * document adds later: kept so while the publisher selects all and renames none. */
export function sectionFrom(existing: Section | null | undefined, rows: ToolRow[], openapi?: string): Section {
  const out: Section = { ...(existing ?? {}) };
  if (!existing && openapi) out.openapi = openapi;
  const edited = rows.some((r) => !r.selected || r.name.trim() !== r.defaultName || r.description.trim() !== r.defaultDescription.trim());
  if (!existing?.tools && !edited) {
    delete out.tools;
    return out;
  }
  const before = new Map((existing?.tools ?? []).map((t) => [t.operation, t]));
  out.tools = rows
    .filter((r) => r.selected)
    .map((r) => {
      const e: Entry = { ...(before.get(r.operation) ?? {}), operation: r.operation };
      delete e.name;
      delete e.description;
      if (r.name.trim() && r.name.trim() !== r.defaultName) e.name = r.name.trim();
      if (r.description.trim() && r.description.trim() !== r.defaultDescription.trim()) e.description = r.description.trim();
      return e;
    });
  return out;
}
