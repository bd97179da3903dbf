// A small markdown renderer for API documents: headings, paragraphs, lists, block quotes,
// fenced code, `code`, **bold**, *italic* and [links](https://...). It builds React
// elements, never HTML strings: a document a publisher wrote cannot run script in a
// subscriber's browser (raw HTML shows as text; links other than http(s), mailto and
// relative ones are dropped to their text).
import { Fragment, type ReactNode } from 'react';

type Block =
  | { kind: 'heading'; level: number; text: string }
  | { kind: 'paragraph'; text: string }
  | { kind: 'list'; ordered: boolean; items: string[] }
  | { kind: 'quote'; text: string }
  | { kind: 'code'; lang: string; text: string };

const LIST_ITEM = /^\s*([-*+]|\d+[.)])\s+(.*)$/;

/** The blocks of `source`, in order. */
export function parseBlocks(source: string): Block[] {
  const lines = source.replace(/\r\n?/g, '\n').split('\n');
  const blocks: Block[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const fence = /^\s*(```|~~~)\s*([\w+-]*)/.exec(line);
    if (fence) {
      const body: string[] = [];
      for (i++; i < lines.length && !lines[i].trim().startsWith(fence[1]); i++) body.push(lines[i]);
      blocks.push({ kind: 'code', lang: fence[2], text: body.join('\n') });
      i++;
      continue;
    }
    const heading = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      blocks.push({ kind: 'heading', level: heading[1].length, text: heading[2] });
      i++;
      continue;
    }
    if (LIST_ITEM.test(line)) {
      const ordered = /^\s*\d/.test(line);
      const items: string[] = [];
      for (; i < lines.length && LIST_ITEM.test(lines[i]); i++) items.push(LIST_ITEM.exec(lines[i])![2]);
      blocks.push({ kind: 'list', ordered, items });
      continue;
    }
    if (/^\s*>/.test(line)) {
      const body: string[] = [];
      for (; i < lines.length && /^\s*>/.test(lines[i]); i++) body.push(lines[i].replace(/^\s*>\s?/, ''));
      blocks.push({ kind: 'quote', text: body.join(' ') });
      continue;
    }
    if (!line.trim()) {
      i++;
      continue;
    }
    const body: string[] = [];
    const startsBlock = (l: string) => !l.trim() || /^(#{1,6}\s|\s*(```|~~~)|\s*>)/.test(l) || LIST_ITEM.test(l);
    for (; i < lines.length && !startsBlock(lines[i]); i++) body.push(lines[i].trim());
    blocks.push({ kind: 'paragraph', text: body.join(' ') });
  }
  return blocks;
}

/** Whether a link target is safe to follow (no `javascript:` and the like). */
export function safeHref(href: string): boolean {
  const h = href.trim().toLowerCase();
  return /^(https?:|mailto:|#|\/|\.)/.test(h) || !/^[a-z][a-z0-9+.-]*:/.test(h);
}

const INLINE = /(`[^`]+`)|(\*\*[^*]+\*\*|__[^_]+__)|(\*[^*\s][^*]*\*|_[^_\s][^_]*_)|(\[[^\]]+\]\([^)\s]+\))/;

/** The inline elements of one block's text. */
export function inline(text: string): ReactNode[] {
  const out: ReactNode[] = [];
  let rest = text;
  for (let key = 0; rest; key++) {
    const m = INLINE.exec(rest);
    if (!m) {
      out.push(rest);
      break;
    }
    if (m.index > 0) out.push(rest.slice(0, m.index));
    const [token] = m;
    if (m[1]) out.push(<code key={key}>{token.slice(1, -1)}</code>);
    else if (m[2]) out.push(<strong key={key}>{inline(token.slice(2, -2))}</strong>);
    else if (m[3]) out.push(<em key={key}>{inline(token.slice(1, -1))}</em>);
    else {
      const link = /^\[([^\]]+)\]\(([^)\s]+)\)$/.exec(token)!;
      out.push(
        safeHref(link[2]) ? (
          <a key={key} href={link[2]} target="_blank" rel="noreferrer noopener">
            {inline(link[1])}
          </a>
        ) : (
          <Fragment key={key}>{inline(link[1])}</Fragment>
        ),
      );
    }
    rest = rest.slice(m.index + token.length);
  }
  return out;
}

function renderBlock(b: Block, key: number): ReactNode {
  switch (b.kind) {
    case 'heading': {
      const H = `h${Math.min(b.level + 1, 6)}` as 'h2';
      return <H key={key}>{inline(b.text)}</H>;
    }
    case 'list': {
      const L = b.ordered ? 'ol' : 'ul';
      return (
        <L key={key}>
          {b.items.map((item, i) => (
            <li key={i}>{inline(item)}</li>
          ))}
        </L>
      );
    }
    case 'quote':
      return <blockquote key={key}>{inline(b.text)}</blockquote>;
    case 'code':
      return (
        <pre key={key} data-lang={b.lang || undefined}>
          <code>{b.text}</code>
        </pre>
      );
    default:
      return <p key={key}>{inline(b.text)}</p>;
  }
}

/** `source` rendered (a document's `#` is an `h2`: the page has its own `h1`). */
export function Markdown({ source, label }: { source: string; label?: string }) {
  return (
    <div className="markdown" aria-label={label} role={label ? 'article' : undefined}>
      {parseBlocks(source).map(renderBlock)}
    </div>
  );
}
