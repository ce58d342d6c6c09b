/**
 * docs/architecture.md is the floor plan a newcomer reads first: it must name every
 * worker role, its queue, every workflow type the lifecycle worker registers and every
 * table the store keeps, so adding one without drawing it fails here.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { migrate, openDatabase } from '../../src/store/database';
import { dockerQueue, storeQueue, targetsQueue, WORKER_ROLES } from '../../src/domain/task-queues';

const root = path.join(__dirname, '..', '..');
const page = fs.readFileSync(path.join(root, 'docs', 'architecture.md'), 'utf8');

/** The names `src/workflows/index.ts` exports: what the lifecycle worker's bundle registers. */
function workflowTypes(): string[] {
  const index = fs.readFileSync(path.join(root, 'src', 'workflows', 'index.ts'), 'utf8');
  return [...index.matchAll(/^export \{([^}]+)\} from/gm)].flatMap((match) => match[1]!.split(',').map((name) => name.trim()));
}

function storeTables(): string[] {
  const db = openDatabase(':memory:');
  try {
    migrate(db);
    const rows = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").all() as { name: string }[];
    return rows.map((row) => row.name);
  } finally {
    db.close();
  }
}

const unnamed = (names: readonly string[]) => names.filter((name) => !page.includes(`\`${name}\``));

describe('docs/architecture.md names every part of the plane', () => {
  test('every worker role and its task queue', () => {
    assert.deepEqual(unnamed(WORKER_ROLES), []);
    assert.deepEqual(unnamed(['<tq>', storeQueue('<tq>'), dockerQueue('<tq>', '<hostId>'), targetsQueue('<tq>')]), []);
  });

  test('every workflow type', () => {
    const types = workflowTypes();
    assert.ok(types.length >= 10, `read ${types.length} workflow types from src/workflows/index.ts`);
    assert.deepEqual(unnamed(types), []);
  });

  test('every store table', () => {
    const tables = storeTables();
    assert.ok(tables.includes('sandboxes') && tables.includes('operations'), `read tables ${tables.join(', ')}`);
    assert.deepEqual(unnamed(tables), []);
  });
});
