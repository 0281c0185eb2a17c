// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', '.data/', '.tools/', '.build/', 'prisma/generated/', 'coverage/'] },
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
  {
    // One data-access layer (db/): runtime SQL lives there, each invariant (the run fence, the
    // ledger's state sets) written once. Raw SQL is also allowed in prisma/ (migrator, drift),
    // jobs/ (a job's storePage writes its own rows through the transaction it is given), test/
    // and bench/ (setup and checks).
    files: ['activities/**/*.ts', 'worker/**/*.ts', 'client/**/*.ts', 'partner/**/*.ts', 'scripts/**/*.ts'],
    // Client files that still hold SQL, until their statements move to db/ too.
    ignores: [
      'client/cli-context.ts',
      'client/compensations/resolve.ts',
      'client/compensations/retry.ts',
      'client/dead-letters/state-changes.ts',
      'client/owed-compensations.ts',
      'client/replay.ts',
      'client/sql-reader.ts',
      'client/status.ts',
      'client/status-jobs.ts',
      'client/stuck-runs/find.ts',
    ],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: 'MemberExpression[property.name=/^\\$(queryRaw|executeRaw)(Unsafe)?$/]',
          message: 'Runtime SQL belongs in db/ (the data-access layer): add or reuse a function there.',
        },
      ],
    },
  },
  {
    // The data-access layer sits at the bottom: it imports prisma/generated and workflow types
    // and helpers, never the layers above it.
    files: ['db/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^\\.\\./(activities|worker|client|jobs)(/|$)',
              message: 'db/ is the bottom layer: it may not import activities/, worker/, client/ or jobs/.',
            },
          ],
        },
      ],
    },
  },
  {
    // The shared runtime (user-facing errors, redaction, logging, metrics, periodic loops) is the
    // bottom layer of every process: it imports nothing of the project above workflow types.
    files: ['runtime/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^\\.\\./(activities|worker|client|jobs|db)(/|$)',
              message:
                'runtime/ is the bottom layer: it may not import activities/, worker/, client/, jobs/ or db/.',
            },
          ],
        },
      ],
    },
  },
);
