// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { layersConfig } from './eslint/layers.js';
import { sqlConfig } from './eslint/sql.js';

export default tseslint.config(
  {
    ignores: [
      'node_modules/',
      '.data/',
      '.tools/',
      '.build/',
      '.pack/',
      'examples/app/',
      'prisma/generated/',
      'coverage/',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        projectService: { allowDefaultProject: ['*.js'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['describe', 'it', 'test', 'suite'] },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['bin/*.js'],
    languageOptions: { globals: { process: 'readonly' } },
    // These files are typed by JSDoc, whose casts these rules do not see: a parsed manifest or a
    // dynamically imported module would be reported however it is annotated.
    rules: { '@typescript-eslint/no-unsafe-assignment': 'off', '@typescript-eslint/no-unsafe-return': 'off' },
  },
  {
    // Workflow code is replayed deterministically inside Temporal's sandbox: it may import only
    // @temporalio/workflow, other workflow files, the contract, and types (activities are proxied
    // by type).
    files: ['workflows/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex:
                '^(?!@temporalio/(workflow|common)$|\\./[a-z0-9-]+\\.ts$|\\.\\./contract/[a-z0-9-]+\\.ts$)',
              allowTypeImports: true,
              message:
                'workflows/ may import only @temporalio/workflow, @temporalio/common, other workflow files and contract/ (type-only imports are fine): no Node, Prisma or activity code.',
            },
          ],
        },
      ],
    },
  },
  {
    // The contract is loaded by workflow code too, so it must be safe in Temporal's sandbox: no
    // Node modules, no I/O, nothing of the project outside contract/.
    files: ['contract/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(?!@temporalio/common$|\\./[a-z0-9-]+\\.ts$)',
              message:
                'contract/ may import only @temporalio/common and other contract files: it is loaded by workflow code.',
            },
          ],
        },
      ],
    },
  },
  // One data-access layer (db/): runtime SQL lives there and in prisma/, nowhere else of the
  // product; no file is let off. The rule, its folders and why the tools are exempt: eslint/sql.js.
  sqlConfig,
  layersConfig,
);
