-- Every foreign key in the current schema: both column lists in key order, and the one-letter
-- pg_constraint codes for ON DELETE / ON UPDATE.
SELECT tc.relname AS table, con.conname AS name, rc.relname AS ref_table,
       con.confdeltype AS on_delete, con.confupdtype AS on_update,
       ARRAY(SELECT a.attname FROM unnest(con.conkey) WITH ORDINALITY k(attnum, ord)
             JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.attnum ORDER BY k.ord)::text[] AS columns,
       ARRAY(SELECT a.attname FROM unnest(con.confkey) WITH ORDINALITY k(attnum, ord)
             JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.attnum ORDER BY k.ord)::text[] AS ref_columns
FROM pg_constraint con
JOIN pg_class tc ON tc.oid = con.conrelid
JOIN pg_class rc ON rc.oid = con.confrelid
JOIN pg_namespace n ON n.oid = tc.relnamespace
WHERE con.contype = 'f' AND n.nspname = current_schema()
