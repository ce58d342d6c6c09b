/**
 * Every relative link of README.md and docs/*.md points at a file that exists and, when it
 * names an `#anchor` of a markdown file, at a heading of that file (or an `<a id>` in it);
 * so does every docs page (with its `#anchor`) mentioned in the code's help texts, errors and
 * comments (src, bin, scripts, bench, test) and in the pages' own code blocks. Anchors
 * follow GitHub's rules: a heading's text lowercased, punctuation other than `-` and `_`
 * dropped, each space a `-`, and the second heading of the same slug `-1`, the third `-2`.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';

const root = path.join(__dirname, '..', '..');

const FENCE = /^\s*(`{3,}|~{3,})/;

/** The lines of a page outside its fenced code blocks (fences inside list items included). */
function proseLines(text: string): { line: string; number: number }[] {
  const lines: { line: string; number: number }[] = [];
  let fence: string | undefined;
  text.split('\n').forEach((line, index) => {
    const opening = FENCE.exec(line);
    if (fence === undefined && opening) fence = opening[1]![0]!.repeat(opening[1]!.length);
    else if (fence !== undefined && opening && opening[1]!.startsWith(fence) && line.trim() === opening[1]) fence = undefined;
    else if (fence === undefined) lines.push({ line, number: index + 1 });
  });
  return lines;
}

/** A heading's text as GitHub renders it: code spans kept verbatim, links as their text, emphasis marks gone. */
function headingText(markdown: string): string {
  return markdown
    .split(/(`+[^`]*`+)/)
    .map((part) =>
      part.startsWith('`')
        ? part.replace(/^`+|`+$/g, '')
        : part
            .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
            .replace(/<[^>]+>/g, '')
            .replace(/\*+/g, ''),
    )
    .join('')
    .trim();
}

/** GitHub's slug of a heading's text (github-slugger), before duplicates are numbered. */
export function slug(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor a page has: its headings' slugs, numbered when repeated, and its `<a id>`s and `<a name>`s. */
export function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const { line } of proseLines(text)) {
    const heading = /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line);
    if (heading) {
      const base = slug(headingText(heading[1]!));
      const count = seen.get(base) ?? 0;
      seen.set(base, count + 1);
      anchors.add(count === 0 ? base : `${base}-${count}`);
    }
    for (const html of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(html[1]!);
  }
  return anchors;
}

/** The targets of a page's inline links and images, outside code blocks and code spans. */
function linksOf(text: string): { target: string; number: number }[] {
  const links: { target: string; number: number }[] = [];
  for (const { line, number } of proseLines(text)) {
    const outsideCode = line.replace(/(`+)[^`]*?\1/g, '');
    for (const match of outsideCode.matchAll(/\]\(\s*<?([^\s)>]+)>?(?:\s+"[^"]*")?\s*\)/g)) links.push({ target: match[1]!, number });
  }
  return links;
}

const pages = [
  'README.md',
  ...fs
    .readdirSync(path.join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => path.join('docs', name)),
];

const anchorCache = new Map<string, Set<string>>();
function anchorsOfFile(file: string): Set<string> {
  let anchors = anchorCache.get(file);
  if (!anchors) anchorCache.set(file, (anchors = anchorsOf(fs.readFileSync(file, 'utf8'))));
  return anchors;
}

/** Why a link of `page` to `target` is broken, or undefined when it is not. */
function brokenBecause(page: string, target: string): string | undefined {
  const [pathPart, anchor] = target.split('#', 2) as [string, string | undefined];
  const file = pathPart === '' ? path.join(root, page) : pathPart.startsWith('/') ? path.join(root, pathPart) : path.join(root, path.dirname(page), decodeURIComponent(pathPart));
  if (!fs.existsSync(file)) return `no file ${path.relative(root, file)}`;
  if (!anchor || !file.endsWith('.md') || anchorsOfFile(file).has(anchor)) return undefined;
  return `no heading #${anchor} in ${path.relative(root, file)}`;
}

/** Every code file whose comments, help texts or errors may name a page of docs/. */
function codeFiles(dir: string): string[] {
  const found: string[] = [];
  for (const entry of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const relative = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules' && entry.name !== 'fixtures') found.push(...codeFiles(relative));
    } else if (/\.(ts|mts|js|mjs|cjs|sh)$/.test(entry.name) || !entry.name.includes('.')) found.push(relative);
  }
  return found;
}

describe('links between the pages (README.md, docs/*.md)', () => {
  test('the slug rules match GitHub', () => {
    assert.equal(slug(headingText('9. An apply that fails')), '9-an-apply-that-fails');
    assert.equal(slug(headingText('`SPEC_INVALID` — the shape')), 'spec_invalid--the-shape');
    assert.equal(slug(headingText("The plane's own calls (IaC)")), 'the-planes-own-calls-iac');
    assert.equal(slug(headingText('A cluster on this machine (`scripts/cluster.sh`)')), 'a-cluster-on-this-machine-scriptsclustersh');
    assert.deepEqual([...anchorsOf('# A\n## Keys\n```sh\n# Keys\n```\n## Keys\n### Keys\n')], ['a', 'keys', 'keys-1', 'keys-2']);
  });

  for (const page of pages) {
    test(`every relative link of ${page} reaches its file and heading`, () => {
      const text = fs.readFileSync(path.join(root, page), 'utf8');
      const broken: string[] = [];
      for (const { target, number } of linksOf(text)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) continue;
        const why = brokenBecause(page, target);
        if (why) broken.push(`${page}:${number} (${target}): ${why}`);
      }
      assert.deepEqual(broken, []);
    });
  }
});

describe('docs pages and anchors named in code and pages', () => {
  test('every one reaches its page and heading', () => {
    const files = [...pages, ...['src', 'bin', 'scripts', 'bench', 'test'].flatMap(codeFiles)];
    const broken: string[] = [];
    let mentions = 0;
    for (const file of files) {
      const lines = fs.readFileSync(path.join(root, file), 'utf8').split('\n');
      lines.forEach((line, index) => {
        for (const match of line.matchAll(/(?<![\w/.-]|\]\()docs\/([\w.-]+\.md)(?:#([\w-]+))?/g)) {
          mentions += 1;
          const page = path.join(root, 'docs', match[1]!);
          const anchor = match[2];
          if (!fs.existsSync(page)) broken.push(`${file}:${index + 1}: no file docs/${match[1]}`);
          else if (anchor && !anchorsOfFile(page).has(anchor)) broken.push(`${file}:${index + 1}: no heading #${anchor} in docs/${match[1]}`);
        }
      });
    }
    assert.ok(mentions > 20, `found ${mentions} mentions of docs/ pages`);
    assert.deepEqual(broken, []);
  });
});
