import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { before, describe, test } from 'node:test';
import { REPO_ROOT } from '../harness/cli';

interface Probe {
  /** The whole program's top-level commands. */
  readonly whole: string[];
  /** Every command the module table names. */
  readonly named: string[];
  /** Commands (and subcommands, as `audit verify`) whose help differs between the whole program and the one `sandboxctl X` builds, or that it lacks. */
  readonly differing: string[];
  /** What `namedProgram` gives for no command, an option, `help` and a typo: true when a program. */
  readonly namedForOthers: boolean[];
}

/** src/cli is the outermost layer (nothing imports it), so the tables are read in a child of their own. */
const PROBE = `
const { COMMAND_MODULES, namedProgram } = require(${JSON.stringify(path.join(REPO_ROOT, 'src', 'cli', 'command-modules.ts'))});
const { buildProgram } = require(${JSON.stringify(path.join(REPO_ROOT, 'src', 'cli', 'program.ts'))});
const helpTexts = (command, at, into) => {
  into.set(at, command.helpInformation());
  for (const sub of command.commands) helpTexts(sub, at + ' ' + sub.name(), into);
  return into;
};
(async () => {
  const whole = await buildProgram();
  const differing = [];
  for (const command of whole.commands) {
    const name = command.name();
    const alone = await namedProgram(['node', 'sandboxctl', name, '--help']);
    const found = alone && alone.commands.find((candidate) => candidate.name() === name);
    const expected = helpTexts(command, name, new Map());
    const got = found ? helpTexts(found, name, new Map()) : new Map();
    for (const [at, text] of expected) if (got.get(at) !== text) differing.push(at);
  }
  const namedForOthers = [[], ['--help'], ['help'], ['creat']].map((rest) => namedProgram(['node', 'sandboxctl', ...rest]) !== undefined);
  process.stdout.write(JSON.stringify({ whole: whole.commands.map((command) => command.name()), named: COMMAND_MODULES.flatMap((module) => module.commands), differing, namedForOthers }));
})();
`;

describe('sandboxctl X loads only the modules naming X', () => {
  let probe: Probe;
  before(() => {
    probe = JSON.parse(execFileSync(process.execPath, ['--import', 'tsx', '-e', PROBE], { cwd: REPO_ROOT, encoding: 'utf8' })) as Probe;
  });

  test('every command of the whole program is named by a module, and no module names one it lacks', () => {
    assert.ok(probe.whole.length > 30, probe.whole.join(' '));
    assert.deepEqual([...new Set(probe.named)].sort(), [...probe.whole].sort());
  });

  test('each command, with every subcommand, has the help (options, arguments, texts) of the whole program', () => {
    assert.deepEqual(probe.differing, []);
  });

  test('no command, an option, help or an unknown word gets the whole program', () => {
    assert.deepEqual(probe.namedForOthers, [false, false, false, false]);
  });
});
