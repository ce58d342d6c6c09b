# shellcheck shell=bash disable=SC2034,SC2153,SC2154 # one shell: scripts/cluster.sh sources every part, settings first
# Schemas: the databases temporal and temporal_visibility, created and migrated with the schema
# tool. Sourced by scripts/cluster.sh, which says what each command does.

sql_tool() {
  SQL_PASSWORD="$(pg_password)" "$sql_tool_bin" --plugin postgres12 --ep "$HOST" -p "$PG_PORT" -u "$PG_USER" "$@"
}

migrate() {
  local db="$1" schema="$2" log="$LOG_DIR/schema.log"
  if [[ -z "$(psql_q "SELECT 1 FROM pg_database WHERE datname = '$db'")" ]]; then
    say "creating database $db"
    sql_tool --db "$db" create-database >>"$log" 2>&1 || { tail -n 20 "$log" >&2; fail "create-database $db failed"; }
  fi
  local has_versioning
  has_versioning="$(PGPASSWORD="$(pg_password)" "$pg_bindir/psql" -h "$HOST" -p "$PG_PORT" -U "$PG_USER" -d "$db" -qtAc \
    "SELECT 1 FROM information_schema.tables WHERE table_name = 'schema_version'")"
  if [[ -z "$has_versioning" ]]; then
    sql_tool --db "$db" setup-schema -v 0.0 >>"$log" 2>&1 || { tail -n 20 "$log" >&2; fail "setup-schema $db failed"; }
  fi
  # The schemas ship inside the tool (also in the module cache: …/server@$SERVER_VERSION/schema/$schema).
  sql_tool --db "$db" update-schema --schema-name "$schema" >>"$log" 2>&1 || { tail -n 20 "$log" >&2; fail "update-schema $db failed"; }
  say "database $db at schema version $(PGPASSWORD="$(pg_password)" "$pg_bindir/psql" -h "$HOST" -p "$PG_PORT" -U "$PG_USER" -d "$db" -qtAc 'SELECT curr_version FROM schema_version')"
}
