import { describe, expect, it } from 'vitest';
import { toYaml } from './yaml';

describe('toYaml', () => {
  it('writes block YAML, quoting what YAML would misread', () => {
    const doc = {
      openapi: '3.0.3',
      info: { title: 'Pets API', version: '1.0' },
      paths: { '/pets/{id}': { get: { responses: { '200': { description: 'ok: yes' } }, tags: ['pets', 'no'] } } },
      servers: [{ url: 'http://127.0.0.1:8080/pets' }],
      empty: {},
      list: [],
      n: 3,
      flag: true,
    };
    expect(toYaml(doc)).toBe(
      [
        'openapi: "3.0.3"',
        'info:',
        '  title: Pets API',
        '  version: "1.0"',
        'paths:',
        '  "/pets/{id}":',
        '    get:',
        '      responses:',
        '        "200":',
        '          description: "ok: yes"',
        '      tags:',
        '        - pets',
        '        - "no"',
        'servers:',
        '  - url: "http://127.0.0.1:8080/pets"',
        'empty: {}',
        'list: []',
        '"n": 3',
        'flag: true',
        '',
      ].join('\n'),
    );
  });
});
