import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The docs' links lead somewhere: a link between the README and the pages of docs/ names a file
 * that exists and, with `#anchor`, a heading in it; an error message or `baton doctor` line that
 * points at `docs/PAGE.md#anchor` points at a heading that is there (a renamed heading would
 * leave the reader of the error at the top of a long page).
 */
const ROOT = path.resolve(import.meta.dirname, '../..');

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens; repeats get -1, -2. */
function anchorsOf(file: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const base = heading[1]!
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

function markdownFiles(): string[] {
  const docs = fs
    .readdirSync(path.join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => path.join(ROOT, 'docs', name));
  return [path.join(ROOT, 'README.md'), ...docs];
}

function allFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    return entry.isDirectory() ? allFiles(full) : [full];
  });
}

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [full] : [];
  });
}

/** What is wrong with a link to `target` (a path relative to `from`'s directory, maybe with `#anchor`), or null. */
function problem(from: string, target: string): string | null {
  const [file, anchor] = target.split('#') as [string, string | undefined];
  const resolved = file === '' ? from : path.resolve(path.dirname(from), file);
  if (!fs.existsSync(resolved)) return `${target}: no file ${path.relative(ROOT, resolved)}`;
  if (anchor === undefined || !resolved.endsWith('.md')) return null;
  return anchorsOf(resolved).has(anchor) ? null : `${target}: no heading with anchor #${anchor} in ${path.relative(ROOT, resolved)}`;
}

describe('links in the docs', () => {
  it('from the README and docs/ lead to files and headings that exist', () => {
    const broken: string[] = [];
    for (const file of markdownFiles()) {
      const text = fs.readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/i.test(target!)) continue; // http:, https:, mailto:
        const wrong = problem(file, target!);
        if (wrong) broken.push(`${path.relative(ROOT, file)}: ${wrong}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('from error messages and doctor lines lead to headings that exist', () => {
    const broken: string[] = [];
    let found = 0;
    for (const file of sourceFiles(path.join(ROOT, 'src'))) {
      for (const [, target] of fs.readFileSync(file, 'utf8').matchAll(/\b(docs\/[\w-]+\.md(?:#[\w-]+)?)/g)) {
        found++;
        const wrong = problem(path.join(ROOT, 'README.md'), target!);
        if (wrong) broken.push(`${path.relative(ROOT, file)}: ${wrong}`);
      }
    }
    expect(broken).toEqual([]);
    // The check reads something: the messages that point at the troubleshooting page exist.
    expect(found).toBeGreaterThan(5);
  });

  it('from the comments of compose.yaml, the Dockerfile and deploy/ lead to headings that exist', () => {
    const files = [path.join(ROOT, 'compose.yaml'), path.join(ROOT, 'Dockerfile'), ...allFiles(path.join(ROOT, 'deploy'))];
    const broken: string[] = [];
    let anchored = 0;
    for (const file of files) {
      for (const [, target] of fs.readFileSync(file, 'utf8').matchAll(/\b(docs\/[\w-]+\.md(?:#[\w-]+)?)/g)) {
        if (target!.includes('#')) anchored++;
        const wrong = problem(path.join(ROOT, 'README.md'), target!);
        if (wrong) broken.push(`${path.relative(ROOT, file)}: ${wrong}`);
      }
    }
    expect(broken).toEqual([]);
    // compose.yaml's dashboard paragraph names its section.
    expect(anchored).toBeGreaterThan(0);
  });
});
