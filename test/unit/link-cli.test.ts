import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';

const LINK_SCRIPT = path.join(__dirname, '..', '..', 'scripts', 'link-cli.sh');

describe('scripts/link-cli.sh: sandboxctl without npx', () => {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'link-cli-'));
  after(() => fs.rmSync(scratch, { recursive: true, force: true }));

  /** A checkout with the link script and a bin that prints the folder it really runs from. */
  function checkout(name: string): string {
    const root = path.join(scratch, name);
    fs.mkdirSync(path.join(root, 'scripts'), { recursive: true });
    fs.mkdirSync(path.join(root, 'bin'));
    fs.copyFileSync(LINK_SCRIPT, path.join(root, 'scripts', 'link-cli.sh'));
    fs.writeFileSync(path.join(root, 'bin', 'sandboxctl.js'), '#!/usr/bin/env node\nconsole.log(__dirname);\n', { mode: 0o755 });
    return root;
  }

  function link(root: string, prefix: string, env: NodeJS.ProcessEnv = {}): string {
    const run = spawnSync('bash', [path.join(root, 'scripts', 'link-cli.sh')], {
      env: { ...process.env, npm_config_global_prefix: prefix, SANDBOXPLANE_LINK_GLOBAL: '1', ...env },
      encoding: 'utf8',
    });
    assert.equal(run.status, 0, run.stderr);
    return run.stderr;
  }

  const ranFrom = (command: string) => execFileSync(command, { encoding: 'utf8' }).trim();

  test('links node_modules/.bin and the global bin folder, says so once, and repoints a link to another checkout', () => {
    const prefix = path.join(scratch, 'prefix');
    fs.mkdirSync(path.join(prefix, 'bin'), { recursive: true });
    const first = checkout('first');
    const globalLink = path.join(prefix, 'bin', 'sandboxctl');

    const said = link(first, prefix);
    assert.equal(fs.readlinkSync(path.join(first, 'node_modules', '.bin', 'sandboxctl')), '../../bin/sandboxctl.js');
    assert.equal(ranFrom(path.join(first, 'node_modules', '.bin', 'sandboxctl')), path.join(first, 'bin'));
    assert.equal(ranFrom(globalLink), path.join(first, 'bin'));
    assert.match(said, new RegExp(`^setup: linked ${globalLink} -> ${first}/bin/sandboxctl.js`));
    assert.equal(said.trim().split('\n').length, 1);

    assert.equal(link(first, prefix), '', 'a second run is quiet');

    const second = checkout('second');
    assert.match(link(second, prefix), new RegExp(`it pointed at ${first}/bin/sandboxctl.js; now at this checkout`));
    assert.equal(ranFrom(globalLink), path.join(second, 'bin'));
  });

  test('without a writable global bin folder it links node_modules/.bin and says how to reach it', () => {
    const root = checkout('unwritable');
    const said = link(root, path.join(scratch, 'no-such-prefix'));
    assert.match(said, /cannot write .*no-such-prefix\/bin/);
    assert.ok(said.includes(`export PATH="${root}/node_modules/.bin:$PATH"`), said);
    assert.equal(ranFrom(path.join(root, 'node_modules', '.bin', 'sandboxctl')), path.join(root, 'bin'));
  });

  test('leaves a file of that name alone, and SANDBOXPLANE_LINK_GLOBAL=0 links nothing global', () => {
    const prefix = path.join(scratch, 'taken');
    fs.mkdirSync(path.join(prefix, 'bin'), { recursive: true });
    fs.writeFileSync(path.join(prefix, 'bin', 'sandboxctl'), 'someone else\n');
    const root = checkout('taken-checkout');
    assert.match(link(root, prefix), /is a file, not a link; left alone/);
    assert.equal(fs.readFileSync(path.join(prefix, 'bin', 'sandboxctl'), 'utf8'), 'someone else\n');

    const empty = path.join(scratch, 'opted-out');
    fs.mkdirSync(path.join(empty, 'bin'), { recursive: true });
    assert.equal(link(checkout('opted-out-checkout'), empty, { SANDBOXPLANE_LINK_GLOBAL: '0' }), '');
    assert.deepEqual(fs.readdirSync(path.join(empty, 'bin')), []);
  });
});
