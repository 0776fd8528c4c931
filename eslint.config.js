import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'data/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'off',
    },
  },
  {
    // Type-aware rules: a promise nobody awaits or catches is a crash or a lost error waiting to happen.
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false, attributes: false } }],
    },
  },
  {
    // A module is used through its index.ts: reaching into another folder's files couples to its internals.
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              // Up one or more folders, into another module, past its index.js.
              regex: '^(\\.\\./)+[^./][^/]*/(?!index\\.js$)',
              message: 'Import another module through its index.js, not its internal files.',
            },
          ],
        },
      ],
    },
  },
  {
    // Unit tests beside the code do no I/O (docs/testing.md): files, sockets, processes and
    // databases make a test an integration test, which lives under test/ with the helpers.
    files: ['src/**/*.test.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: ['fs', 'fs/promises', 'child_process', 'net', 'http', 'https', 'http2', 'dgram', 'worker_threads']
            .flatMap((name) => [name, `node:${name}`])
            .concat(['pg', 'better-sqlite3', '@hono/node-server'])
            .map((name) => ({ name, message: 'A unit test beside the code does no I/O; move it under test/ (docs/testing.md).' })),
          patterns: [
            {
              regex: '(^|/)test/',
              message: 'Test helpers and fakes do I/O; a test that needs them lives under test/ (docs/testing.md).',
            },
            {
              regex: '(^|/)store/index\\.js$',
              allowTypeImports: true,
              message: 'A unit test opens no database; a test that needs the store lives under test/ (docs/testing.md).',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['assets/**/*.js'],
    languageOptions: { globals: { ...globals.browser } },
  },
);
