import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { CONFIG_ENV_KEYS } from '../../src/config/config';
import { FEATURE_FLAG_NAMES, flagEnvName } from '../../src/domain/feature-flags';
import { runCli } from '../harness/cli';

describe('sandboxctl --help', () => {
  let lines: string[] = [];
  const described = (key: string) => lines.some((line) => new RegExp(`^  ${key} {2,}\\S`).test(line));

  before(async () => {
    const result = await runCli(['--help']);
    assert.equal(result.code, 0, result.stderr);
    lines = result.stdout.split('\n');
  });

  test('lists every variable of the configuration schema, each with a description', () => {
    assert.ok(CONFIG_ENV_KEYS.length > 20, `the schema's keys: ${CONFIG_ENV_KEYS.join(', ')}`);
    assert.deepEqual(
      CONFIG_ENV_KEYS.filter((key) => !described(key)),
      [],
    );
  });

  test('lists every feature flag, each with a description', () => {
    assert.deepEqual(
      FEATURE_FLAG_NAMES.map(flagEnvName).filter((key) => !described(key)),
      [],
    );
  });
});

describe('sandboxctl events --help (issue 40)', () => {
  test('names the contract flags: --sandbox, --since (ISO or a duration), --follow, --json', async () => {
    const result = await runCli(['events', '--help']);
    assert.equal(result.code, 0, result.stderr);
    for (const flag of [/--sandbox <id>/, /--since <time> .*ISO 8601 time, or this long ago \(10m, 2h, 1d\)/, /--follow/, /--json .*one JSON line/]) assert.match(result.stdout, flag);
  });
});

describe('arguments a command does not take (issue 39)', () => {
  test('are refused with INVALID_INPUT (exit 2) before anything is asked of Temporal: `snapshots S` lists nothing and says so', async () => {
    // An address nobody answers at: a command that got past its arguments would fail otherwise (TEMPORAL_UNREACHABLE, exit 1).
    const env = { TEMPORAL_ADDRESS: '127.0.0.1:9' };
    for (const args of [
      ['snapshots', 'snap-0123456789abcdef'],
      ['snapshots', 'delete', 'snap-0123456789abcdef', 'snap-0123456789abcdee'],
      ['status', 'sbx-1', 'sbx-2'],
      ['policy', 'list', 'extra'],
      ['iac', 'status', 'run-1', 'run-2'],
      ['events', 'sbx-1'],
    ]) {
      const result = await runCli([...args, '--json'], env);
      assert.equal(result.code, 2, `${args.join(' ')}: ${result.stderr}`);
      assert.equal(result.stdout, '');
      const { error } = JSON.parse(result.stderr) as { error: { code: string; message: string } };
      assert.equal(error.code, 'INVALID_INPUT');
      assert.match(error.message, /too many arguments/);
    }
  });
});
