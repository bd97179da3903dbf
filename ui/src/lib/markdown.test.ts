import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { Markdown, parseBlocks, safeHref } from './markdown';

const html = (source: string) => renderToStaticMarkup(createElement(Markdown, { source }));

describe('markdown for API documents', () => {
  it('renders headings, paragraphs, lists, quotes and fenced code', () => {
    const out = html('# Getting started\n\nCall **GET /pets** with\na key.\n\n- one\n- two\n\n1. first\n2. second\n\n> note\n\n```json\n{"a": 1}\n```');
    expect(out).toContain('<h2>Getting started</h2>');
    expect(out).toContain('<p>Call <strong>GET /pets</strong> with a key.</p>');
    expect(out).toContain('<ul><li>one</li><li>two</li></ul>');
    expect(out).toContain('<ol><li>first</li><li>second</li></ol>');
    expect(out).toContain('<blockquote>note</blockquote>');
    expect(out).toContain('<pre data-lang="json"><code>{&quot;a&quot;: 1}</code></pre>');
  });
  it('renders inline code, emphasis and safe links', () => {
    const out = html('Use `apikey` *here*, see [the guide](https://example.com/g).');
    expect(out).toContain('<code>apikey</code>');
    expect(out).toContain('<em>here</em>');
    expect(out).toContain('<a href="https://example.com/g" target="_blank" rel="noreferrer noopener">the guide</a>');
  });
  it('never lets a document run script: raw HTML is text, javascript: links are dropped', () => {
    const out = html('<script>alert(1)</script> and [click](javascript:alert(1)) <img src=x onerror=alert(1)>');
    expect(out).not.toContain('<script');
    expect(out).not.toContain('<img');
    expect(out).not.toContain('href="javascript');
    expect(out).toContain('&lt;script&gt;');
    expect(safeHref('JavaScript:alert(1)')).toBe(false);
    expect(safeHref('data:text/html,x')).toBe(false);
    expect(safeHref('/docs/a')).toBe(true);
    expect(safeHref('mailto:a@b.c')).toBe(true);
  });
  it('keeps an unterminated fence as code to the end', () => {
    expect(parseBlocks('```\nx\ny')).toEqual([{ kind: 'code', lang: '', text: 'x\ny' }]);
  });
});
