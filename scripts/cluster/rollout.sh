# shellcheck shell=bash disable=SC2034,SC2153,SC2154 # one shell: scripts/cluster.sh sources every part, settings first
# rollout / drain (DESIGN §16): lifecycle workers by build, with Worker Versioning. Sourced by
# scripts/cluster.sh, which says what each command does.

LIFECYCLE_WORKERS=(lifecycle-1 lifecycle-2)

# `sandboxctl` against this cluster's plane.
plane_cli() {
  local tls=()
  mapfile -t tls < <(tls_plane_env operator)
  env "TEMPORAL_ADDRESS=$HOST:$FRONTEND_PORT" "TEMPORAL_NAMESPACE=$NAMESPACE" "SANDBOXPLANE_TASK_QUEUE=$TASK_QUEUE" "${tls[@]}" node "$root/bin/sandboxctl.js" "$@"
}

# Where a lifecycle build's code is kept (bin/, dist/, package.json; node_modules, .data and .tools linked), so
# its workers start the same code after any rebuild of the checkout, until it has drained.
build_dir() { echo "$DATA/builds/$1"; }

# The build the lifecycle workers run (`up` adopts the checkout's the first time; `rollout` moves it).
current_build() { cat "$DATA/builds/current" 2>/dev/null || true; }

# The build id of the checkout's dist/: SANDBOXPLANE_BUILD_ID, or what the worker derives
# (wf- and the first 16 hex digits of the workflow bundle's sha256, src/worker/workflow-code.ts).
checkout_build() {
  if [[ -n "${SANDBOXPLANE_BUILD_ID:-}" ]]; then echo "$SANDBOXPLANE_BUILD_ID"; return; fi
  echo "wf-$(sha256sum "$root/dist/workflow-bundle.js" | cut -c1-16)"
}

# Keeps a copy of the checkout's build as build $1 and makes it the lifecycle workers' build.
adopt_build() {
  local id="$1"
  [[ -n "$id" ]] || fail "no build id"
  if [[ ! -d "$(build_dir "$id")" ]]; then
    say "keeping build $id in $(build_dir "$id") for the lifecycle workers"
    mkdir -p "$(build_dir "$id")"
    cp -a "$root/bin" "$root/dist" "$root/package.json" "$(build_dir "$id")/"
  fi
  # The checkout's packages, and its .data and .tools: the same codec keys and defaults as every other worker.
  local shared
  for shared in node_modules .data .tools; do ln -sfn "$root/$shared" "$(build_dir "$id")/$shared"; done
  echo "$id" >"$DATA/builds/current"
}

# The old-build lifecycle workers still draining: drain-<build>-lifecycle-N.
draining() {
  local f
  for f in "$RUN_DIR"/drain-*.build; do [[ -e "$f" ]] && basename "$f" .build; done
  return 0
}

# The number of sandboxes pinned to build $1 (`sandboxctl deployment --json`), or "current".
pinned_runs() {
  plane_cli deployment --json | node -e '
    const report = JSON.parse(require("fs").readFileSync(0, "utf8"));
    const build = report.builds.find((b) => b.buildId === process.argv[1]);
    console.log(build === undefined ? 0 : build.current ? "current" : build.openRuns);' "$1"
}

# `rollout`: the lifecycle workers of the checkout's build (`npm run build`; its id is
# SANDBOXPLANE_BUILD_ID or derived from its workflow code) start beside the old ones, become
# current, and the old ones drain: every sandbox they started stays pinned to them until it
# ends (DESIGN §16). Store and docker workers stay as they are (their activities change only
# additively; `restart` them). `drain` (or the next rollout) stops the old ones once nothing
# is pinned to them.
cmd_rollout() {
  need_root rollout
  local name old new
  bash "$root/scripts/setup.sh" >&2
  old="$(current_build)"
  new="$(checkout_build)"
  if [[ "$new" == "$old" ]]; then
    say "the checkout's lifecycle build is $new already: nothing to roll out (\`restart lifecycle-1\` restarts a worker)"
    return 0
  fi
  adopt_build "$new"
  for name in "${LIFECYCLE_WORKERS[@]}"; do
    if [[ -z "$old" ]] || ! alive_as "$(pid_of "$name")" node; then continue; fi
    # Same process, new name: it goes on serving its pinned runs, logging to the same file.
    echo "$old" >"$RUN_DIR/drain-$old-$name.build"
    mv "$RUN_DIR/$name.pid" "$RUN_DIR/drain-$old-$name.pid"
    mv "$LOG_DIR/$name.log" "$LOG_DIR/drain-$old-$name.log"
    mv "$RUN_DIR/$name.logstart" "$RUN_DIR/drain-$old-$name.logstart" 2>/dev/null || true
    mv "$RUN_DIR/$name.metrics" "$RUN_DIR/drain-$old-$name.metrics" 2>/dev/null || true
  done
  for name in "${LIFECYCLE_WORKERS[@]}"; do start_worker "$name"; done
  for name in "${LIFECYCLE_WORKERS[@]}"; do wait_for_worker "$name"; done
  say "promoting build $new (was ${old:-none})"
  plane_cli deployment promote "$new" >&2 || fail "sandboxctl deployment promote $new failed (above)"
  cmd_drain
}

# `drain`: stops each old-build lifecycle worker once no sandbox is pinned to its build (and
# forgets the kept copy of the build); says how many still are for the others.
cmd_drain() {
  local name build runs
  for name in $(draining); do
    build="$(cat "$RUN_DIR/$name.build")"
    runs="$(pinned_runs "$build")" || fail "sandboxctl deployment failed"
    if [[ "$runs" == current ]]; then
      # Promoted back (a rollback): a worker of the current build is not draining.
      say "$name runs build $build, which is current again; it stays"
    elif [[ "$runs" == 0 ]]; then
      stop_process "$name" node
      rm -f "$RUN_DIR/$name.build" "$RUN_DIR/$name.logstart" "$RUN_DIR/$name.metrics"
      write_scrape_targets
      say "$name drained (build $build has no pinned sandbox left)"
    else
      say "$name still serves $runs sandbox(es) pinned to build $build; \`cluster.sh drain\` stops it once they end"
    fi
  done
  local dir
  for dir in "$DATA"/builds/*/; do
    [[ -d "$dir" ]] || continue
    build="$(basename "$dir")"
    [[ "$build" == "$(current_build)" ]] && continue
    ls "$RUN_DIR"/drain-"$build"-*.build >/dev/null 2>&1 || rm -rf "$dir"
  done
}
