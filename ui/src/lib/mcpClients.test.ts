import { describe, expect, it } from 'vitest';
import { argumentsSkeleton, clientConfigs, serverKey } from './mcpClients';

const URL = 'http://gw.example:8080/mcp/pets/v1';

describe('clientConfigs', () => {
  const byClient = Object.fromEntries(clientConfigs('Pet Store', URL).map((c) => [c.client, JSON.parse(c.text)]));

  it('writes each client in its own format', () => {
    expect(byClient['Claude Code'].mcpServers['pet-store']).toEqual({
      type: 'http',
      url: URL,
      headers: { Authorization: 'Bearer ${TURNPIKE_TOKEN}' },
    });
    expect(byClient['VS Code'].servers['pet-store']).toMatchObject({ type: 'http', url: URL });
    expect(byClient['VS Code'].servers['pet-store'].headers.Authorization).toBe('Bearer ${input:pet-store-token}');
    expect(byClient['VS Code'].inputs[0]).toMatchObject({ id: 'pet-store-token', password: true });
    expect(byClient['Cursor'].mcpServers['pet-store']).toEqual({ url: URL, headers: { Authorization: 'Bearer ${env:TURNPIKE_TOKEN}' } });
    expect(byClient['Claude Desktop'].mcpServers['pet-store'].args).toContain(URL);
  });

  it('names the server after the API', () => {
    expect(serverKey('  Orders API v2 ')).toBe('orders-api-v2');
    expect(serverKey('***')).toBe('turnpike-mcp');
  });
});

describe('argumentsSkeleton', () => {
  it('fills the required arguments by type, example first', () => {
    const schema = {
      type: 'object',
      properties: { id: { type: 'integer' }, kind: { enum: ['cat', 'dog'] }, q: { type: 'string' }, body: { type: 'object', example: { a: 1 } } },
      required: ['id', 'kind', 'body'],
    };
    expect(argumentsSkeleton(schema)).toEqual({ id: 1, kind: 'cat', body: { a: 1 } });
    expect(argumentsSkeleton(undefined)).toEqual({});
  });
});
