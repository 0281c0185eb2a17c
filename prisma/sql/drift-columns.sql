-- Every column of every table in the current schema, in column order. Enum columns (and arrays of
-- them) use the type's bare name, as the Prisma schema spells the enum or its @@map; format_type()
-- could quote it.
SELECT c.relname AS table, a.attname AS column, NOT a.attnotnull AS nullable,
       CASE WHEN et.typtype = 'e' THEN et.typname || CASE WHEN t.typcategory = 'A' THEN '[]' ELSE '' END
            ELSE format_type(a.atttypid, a.atttypmod) END AS type,
       pg_get_expr(d.adbin, d.adrelid) AS default
FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_type t ON t.oid = a.atttypid
JOIN pg_type et ON et.oid = CASE WHEN t.typcategory = 'A' THEN t.typelem ELSE t.oid END
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY c.relname, a.attnum
