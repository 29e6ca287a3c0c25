// ESLint over the whole tree (`npx eslint .`, run by `npm test`): typescript-eslint's recommended
// type-checked rules on every TypeScript file, ESLint's recommended rules on the plain JavaScript
// (the page under public/ runs in the browser, the build scripts under Node). Formatting is
// Prettier's job (.prettierrc.json), so no stylistic rule is on here. docs/testing.md → Lint and format.
import js from '@eslint/js';
import globals from 'globals';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

export default defineConfig(
  { ignores: ['dist/', 'node_modules/', '.toolchains/', 'data/', '.tap/'] },
  {
    files: ['**/*.ts'],
    extends: [tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // A name starting with `_` is unused on purpose: a parameter an interface hands over, a key
      // left out of a rest copy (`{ key: _k, ...rest }`).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      // Off: `async` on a function that happens not to await is how it keeps a promise-returning
      // contract (Recorder.start, a mount's http, Fastify plugins and hooks): a throw becomes a
      // rejection the caller handles. Dropping `async` to please the rule would turn those into
      // synchronous throws, a change of behaviour; a missing await is found by no-floating-promises.
      '@typescript-eslint/require-await': 'off',
      // tap runs and waits for a subtest whether or not its promise is awaited: t.test(...) is safe
      // to leave floating; every other promise must be awaited, returned or voided.
      '@typescript-eslint/no-floating-promises': [
        'error',
        { allowForKnownSafeCalls: [{ from: 'package', package: '@tapjs/test', name: ['test', 'skip', 'todo', 'only'] }] },
      ],
    },
  },
  {
    // Tests keep every rule that finds real defects (floating and misused promises, await of a
    // non-promise, unused variables, unsafe stringification); off here are only the rules that fight
    // what a test does. Bodies parsed from HTTP and WebSocket JSON are `any` on purpose: asserting
    // their shape is the test's job, so the no-unsafe-* family and no-explicit-any would flag every
    // assertion.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    extends: [js.configs.recommended],
  },
  { files: ['public/**/*.js'], languageOptions: { globals: globals.browser } },
  { files: ['tools/**/*.mjs', 'eslint.config.js'], languageOptions: { globals: globals.node } },
);
