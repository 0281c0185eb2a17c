#!/bin/sh
# Temporal's schema in its PostgreSQL (run by temporalio/admin-tools in deploy/compose.yaml), the
# way Temporal's own compose files and auto-setup do it on every start: create both databases
# (already there on a later `up`), set up the version table, and update each schema to the
# image's latest version.
set -eu
: "${POSTGRES_SEEDS:?}" "${POSTGRES_USER:?}"
for db in temporal temporal_visibility; do
  dir=temporal
  [ "$db" = temporal_visibility ] && dir=visibility
  sql() { temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" -u "$POSTGRES_USER" -p 5432 --db "$db" "$@"; }
  sql create || echo "database $db exists"
  sql setup-schema -v 0.0
  sql update-schema -d "/etc/temporal/schema/postgresql/v12/$dir/versioned"
done
