import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { CONFIG_ENV_KEYS } from '../../src/config/config';
import { FEATURE_FLAG_NAMES, flagEnvName } from '../../src/domain/feature-flags';
import { runCli } from '../helpers/cli';

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
