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
              // Up one or more folders, into another module, past its index.js (test/ helpers excepted).
              regex: '^(\\.\\./)+(?!test/)[^./][^/]*/(?!index\\.js$)',
              message: 'Import another module through its index.js, not its internal files.',
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
