// ESLint over the whole tree (`npx eslint .`, run by `npm test`): typescript-eslint's recommended
// type-checked rules on every TypeScript file, ESLint's recommended rules on the plain JavaScript
// (the page under public/ runs in the browser, the build scripts under Node). Formatting is
// Prettier's job (.prettierrc.json), so no stylistic rule is on here. docs/testing.md → Lint and format.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.toolchains/', 'data/', '.tap/'] },
  {
    files: ['**/*.ts'],
    extends: [tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    extends: [js.configs.recommended],
  },
  { files: ['public/**/*.js'], languageOptions: { globals: globals.browser } },
  { files: ['tools/**/*.mjs', 'eslint.config.js'], languageOptions: { globals: globals.node } },
);
