// Prisma CLI configuration (Prisma 7 keeps connection URLs out of schema.prisma).
// `prisma generate` needs no database; `prisma migrate deploy` reads DATABASE_URL here.
// On machines without Prisma's schema engine, `durable-fetch migrate` applies the same
// migration folders itself (prisma/migrator.ts).
import { defineConfig } from 'prisma/config';

export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  datasource: { url: process.env.DATABASE_URL ?? '' },
});
