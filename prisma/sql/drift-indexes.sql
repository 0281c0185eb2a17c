-- Every index on a table in the current schema, with its key columns in order (INCLUDE columns left
-- out). `special` marks expression and partial indexes, which the Prisma schema cannot express.
SELECT tc.relname AS table, ic.relname AS name, ix.indisprimary AS primary, ix.indisunique AS unique,
       (ix.indexprs IS NOT NULL OR ix.indpred IS NOT NULL) AS special,
       ARRAY(SELECT a.attname FROM unnest(ix.indkey::int2[]) WITH ORDINALITY k(attnum, ord)
             JOIN pg_attribute a ON a.attrelid = ix.indrelid AND a.attnum = k.attnum
             WHERE k.ord <= ix.indnkeyatts ORDER BY k.ord)::text[] AS columns
FROM pg_index ix
JOIN pg_class tc ON tc.oid = ix.indrelid
JOIN pg_class ic ON ic.oid = ix.indexrelid
JOIN pg_namespace n ON n.oid = tc.relnamespace
WHERE n.nspname = current_schema() AND tc.relkind IN ('r', 'p')
