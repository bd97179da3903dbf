import { describe, expect, it } from 'vitest';
import { buildPath, operations } from './openapi';

const doc = {
  openapi: '3.0.3',
  paths: {
    '/pets/{id}': {
      parameters: [{ name: 'id', in: 'path', required: true }],
      get: {
        summary: 'Get a pet',
        parameters: [{ name: 'fields', in: 'query' }],
        responses: { '200': { description: 'the pet' }, '404': {} },
      },
      put: { requestBody: { content: {} } },
    },
    '/broken': 'not an object',
  },
};

describe('operations', () => {
  it('lists every method with merged parameters', () => {
    const ops = operations(doc);
    expect(ops.map((o) => `${o.method} ${o.path}`)).toEqual(['GET /pets/{id}', 'PUT /pets/{id}']);
    expect(ops[0].params.map((p) => p.name)).toEqual(['fields', 'id']);
    expect(ops[0].responses).toEqual([
      { status: '200', description: 'the pet' },
      { status: '404', description: undefined },
    ]);
    expect(ops[0].hasBody).toBe(false);
    expect(ops[1].hasBody).toBe(true);
  });
  it('survives documents that are not OpenAPI', () => {
    expect(operations(null)).toEqual([]);
    expect(operations({ paths: [] })).toEqual([]);
  });
  it('builds a path with escaped templates and set query values', () => {
    const [get] = operations(doc);
    expect(buildPath('/pets/{id}', { id: 'a b', fields: 'name' }, get)).toBe('/pets/a%20b?fields=name');
    expect(buildPath('/pets/{id}', { id: '1' }, get)).toBe('/pets/1');
  });
});
