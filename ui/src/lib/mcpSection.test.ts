import { describe, expect, it } from 'vitest';
import { sectionFrom, type ToolRow } from './mcpSection';

const row = (operation: string, over: Partial<ToolRow> = {}): ToolRow => ({
  operation,
  selected: true,
  name: operation,
  description: `about ${operation}`,
  defaultName: operation,
  defaultDescription: `about ${operation}`,
  ...over,
});

describe('sectionFrom', () => {
  it('a first save with everything as proposed serves every operation from the document', () => {
    expect(sectionFrom(null, [row('getPet'), row('addPet')], 'openapi: 3.0.0')).toEqual({ openapi: 'openapi: 3.0.0' });
  });

  it('lists the selected operations with the names and descriptions that differ', () => {
    const s = sectionFrom(null, [row('getPet', { name: 'fetch_pet' }), row('addPet', { selected: false })], 'doc');
    expect(s).toEqual({ openapi: 'doc', tools: [{ operation: 'getPet', name: 'fetch_pet' }] });
  });

  it("keeps what other editors wrote: the section's fields and each entry's", () => {
    const existing = {
      openapi: 'stored',
      max_sessions: 5,
      tools: [{ operation: 'getPet', name: 'old', scopes: ['pets:read'] }],
    };
    const s = sectionFrom(existing, [row('getPet', { description: 'New words' }), row('addPet')], 'ignored');
    expect(s).toEqual({
      openapi: 'stored',
      max_sessions: 5,
      tools: [
        { operation: 'getPet', description: 'New words', scopes: ['pets:read'] },
        { operation: 'addPet' },
      ],
    });
  });
});
