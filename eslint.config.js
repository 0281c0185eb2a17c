// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', '.data/', '.tools/', 'prisma/generated/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        projectService: { allowDefaultProject: ['*.js', 'bin/*.js'] },
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
  { files: ['bin/*.js'], languageOptions: { globals: { process: 'readonly' } } },
  {
    // Workflow code is replayed deterministically inside Temporal's sandbox: it may import only
    // @temporalio/workflow, other workflow files, and types (activities are proxied by type).
    files: ['workflows/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(?!@temporalio/(workflow|common)$|\\./[a-z0-9-]+\\.ts$)',
              allowTypeImports: true,
              message:
                'workflows/ may import only @temporalio/workflow, @temporalio/common and other workflow files (type-only imports are fine): no Node, Prisma or activity code.',
            },
          ],
        },
      ],
    },
  },
);
