/**
 * The PostgreSQL schema that holds the engine's tables, types and functions (and its own
 * `_prisma_migrations`), apart from the application's tables in `public`. Operators' SQL names
 * them `durable_fetch.<table>`, or sets `search_path` first.
 */
export const ENGINE_SCHEMA = 'durable_fetch';
