// Lint rules of ../shared/STYLE.md: type-aware promises, type-only imports, no import
// cycles, no Node built-ins (nor process.env) in deterministic code, and the direction
// of imports between our folders.
import { readdirSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((name) => `node:${name}`)];

// Read, not listed: a folder added to src/ is outside every layer's allowed set at once.
const srcEntries = readdirSync(path.join(import.meta.dirname, 'src')).map((entry) => `src/${entry}`);
/** Every part of this repository except `allowed`: what a zone forbids. */
const oursExcept = (...allowed) => [...srcEntries, 'test', 'bench'].filter((entry) => !allowed.includes(entry));

const RESTRICTED_PATH_ZONES = [
  {
    target: 'src/domain',
    from: oursExcept('src/domain'),
    message: 'src/domain imports nothing of ours but src/domain (STYLE.md, direction of imports).',
  },
  {
    target: 'src/workflows',
    from: oursExcept('src/domain', 'src/workflows', 'src/activities'),
    message: 'src/workflows imports only src/domain and src/workflows (DESIGN §9).',
  },
  {
    // proxyActivities needs the activities' type; the type-only half is checked by
    // @typescript-eslint/no-restricted-imports below.
    target: 'src/workflows',
    from: 'src/activities',
    except: ['./index.ts'],
    message: 'src/workflows sees activities only as `import type { Activities } from ../activities`.',
  },
  {
    target: oursExcept('src/cli'),
    from: 'src/cli',
    message: 'Nothing imports src/cli: it is the outermost layer.',
  },
  {
    // The CLI hosts the worker (`sandboxctl dev`, `sandboxctl worker`); tests and the bench start workers of their own.
    target: oursExcept('src/cli', 'src/worker', 'test', 'bench'),
    from: 'src/worker',
    message: 'Nothing but src/cli (and tests) imports src/worker.',
  },
  {
    target: 'src/store',
    from: oursExcept('src/store', 'src/domain', 'src/config', 'src/crypto'),
    message: 'src/store imports only src/domain, src/crypto and config types.',
  },
  {
    // Small crypto primitives (TOTP, sealing, secrets at rest) shared by the store role and its clients.
    target: 'src/crypto',
    from: oursExcept('src/crypto', 'src/domain'),
    message: 'src/crypto imports nothing of ours but src/domain.',
  },
  {
    target: 'src/docker',
    from: oursExcept('src/docker', 'src/domain', 'src/config', 'src/telemetry'),
    message: 'src/docker imports only src/domain, src/telemetry and config types.',
  },
  {
    // Adapters drive their containers through the broker interface (DESIGN §4, §5).
    target: 'src/adapters',
    from: oursExcept('src/adapters', 'src/domain', 'src/config', 'src/docker', 'src/telemetry'),
    message: 'src/adapters imports only src/domain, src/docker, src/telemetry and config types.',
  },
  {
    // What the bench and the tests both use lives in test/harness, so the bench's dependency on it is honest.
    target: ['bench', 'test/harness'],
    from: 'test/helpers',
    message: "bench and test/harness import test/harness, not test/helpers (the tests' own helpers).",
  },
  {
    target: 'test',
    from: 'bench',
    message: 'Tests do not import the bench: what both need lives in test/harness.',
  },
  {
    // Spans and metrics (DESIGN §17) are used from every layer that does I/O, so they depend on none.
    target: 'src/telemetry',
    from: oursExcept('src/telemetry', 'src/domain', 'src/config'),
    message: 'src/telemetry imports only src/domain and config types.',
  },
];

// The commands that host the store or check it (DESIGN §10: `dev`, `worker`, `doctor`);
// every other command reaches the store through Temporal.
const CLI_STORE_IMPORTERS = ['src/cli/dev-launcher.ts', 'src/cli/doctor-checks.ts', 'src/cli/worker-command.ts'];

const restrictedPaths = (zones) => ['error', { basePath: import.meta.dirname, zones }];

/** Imports allowed only as `import type`, where a folder may see another's shapes but not its code. */
const typeOnlyImports = (patterns, message) => ['error', { paths: [], patterns: [{ group: patterns, allowTypeImports: true, message }] }];

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.tools/', '.data/', 'test-results/', 'bin/', 'test/fixtures/'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { project: './tsconfig.check.json', tsconfigRootDir: import.meta.dirname },
    },
    plugins: { 'import-x': importX },
    settings: { 'import-x/resolver': { typescript: { project: './tsconfig.check.json' } } },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        // node:test collects these itself; awaiting them would serialise test declaration.
        { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'describe', 'it', 'suite'] }] },
      ],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'import-x/no-cycle': 'error',
      'import-x/no-restricted-paths': restrictedPaths(RESTRICTED_PATH_ZONES),
    },
  },
  {
    files: ['src/cli/**/*.ts'],
    ignores: CLI_STORE_IMPORTERS,
    rules: {
      'import-x/no-restricted-paths': restrictedPaths([
        ...RESTRICTED_PATH_ZONES,
        { target: 'src/cli', from: 'src/store', message: 'The CLI reaches the store through Temporal (DESIGN §10), not by opening it.' },
      ]),
    },
  },
  {
    files: ['src/workflows/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': typeOnlyImports(
        ['**/activities', '**/activities/**'],
        'Workflow code must not bundle activity code: import its type only (`import type`).',
      ),
    },
  },
  {
    files: ['src/store/**/*.ts', 'src/docker/**/*.ts', 'src/adapters/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': typeOnlyImports(['**/config/**'], 'Configuration arrives as values; import its types only.'),
    },
  },
  {
    files: ['src/workflows/**/*.ts', 'src/domain/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({
            name,
            message: 'Workflow and domain code must stay deterministic and free of I/O: no Node built-ins.',
          })),
        },
      ],
      'no-restricted-globals': [
        'error',
        { name: 'process', message: 'Workflow and domain code gets its values as arguments, never from process.' },
        { name: 'require', message: 'Use imports; workflow code is bundled.' },
      ],
    },
  },
);
