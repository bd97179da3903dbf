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

describe('bodyExample', () => {
  const pets = {
    openapi: '3.0.3',
    components: {
      schemas: {
        Pet: {
          type: 'object',
          required: ['name'],
          properties: {
            name: { type: 'string' },
            age: { type: 'integer', minimum: 1 },
            tags: { type: 'array', items: { $ref: '#/components/schemas/Tag' } },
            kind: { type: 'string', enum: ['cat', 'dog'] },
            born: { type: 'string', format: 'date' },
            parent: { $ref: '#/components/schemas/Pet' },
          },
        },
        Tag: { type: 'object', properties: { label: { type: 'string', example: 'friendly' } } },
      },
    },
    paths: {
      '/pets': {
        post: { requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/Pet' } } } } },
        put: {
          requestBody: {
            content: { 'application/json': { schema: { $ref: '#/components/schemas/Pet' }, example: { name: 'Rex' } } },
          },
        },
        patch: {
          requestBody: { content: { 'application/merge-patch+json': { examples: { one: { value: { age: 3 } } } } } },
        },
      },
    },
  };
  const byMethod = (m: string) => operations(pets).find((o) => o.method === m)!;

  it('takes the example first', () => {
    expect(JSON.parse(byMethod('PUT').bodyExample!)).toEqual({ name: 'Rex' });
    expect(JSON.parse(byMethod('PATCH').bodyExample!)).toEqual({ age: 3 });
  });

  it('builds a skeleton from the schema, through refs, stopping at recursion', () => {
    expect(JSON.parse(byMethod('POST').bodyExample!)).toEqual({
      name: 'string',
      age: 1,
      tags: [{ label: 'friendly' }],
      kind: 'cat',
      born: '1970-01-01',
      parent: {},
    });
  });

  it('reads a Swagger 2.0 body parameter and leaves GETs without a body', () => {
    const v2 = {
      swagger: '2.0',
      definitions: { Order: { properties: { qty: { type: 'number' }, paid: { type: 'boolean' } } } },
      paths: { '/orders': { post: { parameters: [{ name: 'b', in: 'body', schema: { $ref: '#/definitions/Order' } }] }, get: {} } },
    };
    const ops = operations(v2);
    expect(JSON.parse(ops.find((o) => o.method === 'POST')!.bodyExample!)).toEqual({ qty: 0, paid: false });
    expect(ops.find((o) => o.method === 'GET')!.bodyExample).toBeUndefined();
  });
});
