// Lint rules of ../shared/STYLE.md: type-aware promises, type-only imports, no import
// cycles, and no Node built-ins (nor process.env) in deterministic code.
import { builtinModules } from 'node:module';
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((name) => `node:${name}`)];

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.tools/', '.data/', 'test-results/', 'bin/'] },
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
