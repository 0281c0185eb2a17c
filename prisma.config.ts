// Prisma CLI configuration (Prisma 7 keeps connection URLs out of the schema files).
// `prisma generate` needs no database; `prisma migrate deploy` reads DATABASE_URL here.
// On machines without Prisma's schema engine, `durable-fetch migrate` applies the same
// migration folders itself (prisma/migrator.ts).
import { defineConfig } from 'prisma/config';

export default defineConfig({
  // A folder: Prisma's multi-file schema reads every *.prisma file under it.
  schema: 'prisma/schema',
  migrations: { path: 'prisma/migrations' },
  datasource: { url: process.env.DATABASE_URL ?? '' },
});
