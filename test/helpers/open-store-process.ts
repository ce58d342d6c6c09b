/**
 * A child process for the concurrent-open test: it loads the store code, says `ready`,
 * blocks until its parent writes a line to stdin (the barrier), then opens the file named
 * in argv and prints one JSON line with the outcome.
 *
 * `node --import tsx test/helpers/open-store-process.ts FILE open|migrate`:
 * `open` goes through `Store.open` (what a worker does); `migrate` opens without migrating
 * and then calls `migrate()` itself, so the line says which versions this process applied.
 */
import { migrate, openDatabase, Store } from '../../src/store';

function outcome(file: string, mode: string): Record<string, unknown> {
  try {
    if (mode === 'open') {
      const store = Store.open(file);
      const version = store.schemaVersion;
      store.close();
      return { ok: true, version };
    }
    const db = openDatabase(file, { migrate: false });
    const applied = migrate(db);
    db.close();
    return { ok: true, ...applied };
  } catch (err) {
    const { code, message } = err as { code?: unknown; message?: unknown };
    return { ok: false, code, message };
  }
}

function run(): void {
  const [file, mode] = process.argv.slice(2);
  if (file === undefined || (mode !== 'open' && mode !== 'migrate')) throw new Error('usage: open-store-process.ts FILE open|migrate');
  process.stdin.once('data', () => {
    process.stdout.write(`${JSON.stringify(outcome(file, mode))}\n`);
    process.stdin.destroy();
  });
  process.stdout.write('ready\n');
}

try {
  run();
} catch (err) {
  console.error(err);
  process.exit(1);
}
