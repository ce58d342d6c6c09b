/**
 * One line for each variable of the configuration's schema (`CONFIG_ENV_KEYS` in
 * ./config), for `sandboxctl --help`; test/unit/cli-help.test.ts fails when a key of the
 * schema has none. `.env.example` says more about each.
 */
export const CONFIG_ENV_DESCRIPTIONS: Readonly<Record<string, string>> = Object.freeze({
  TEMPORAL_ADDRESS: 'Temporal frontend host:port (default 127.0.0.1:7233)',
  TEMPORAL_NAMESPACE: 'Temporal namespace (default "default")',
  SANDBOXPLANE_TASK_QUEUE: 'task queue of the workers (default "sandboxplane")',
  SANDBOXPLANE_DB: 'SQLite projection file of the store role (default .data/sandboxplane.sqlite)',
  DOCKER_HOST: "Docker engine of the docker role's sandboxes (default the engine's socket)",
  SANDBOXPLANE_LOG_LEVEL: 'trace|debug|info|warn|error|fatal|silent (default info)',
  SANDBOXPLANE_TEMPORAL_CLI: 'the Temporal CLI `sandboxctl dev` runs (default .tools/bin/temporal, then PATH)',
  SANDBOXPLANE_DEFAULT_TTL: 'TTL of a request that names none (default 30m; durations such as 90s, 30m, 2h)',
  SANDBOXPLANE_TTL_CEILING: 'no TTL or extension reaches further than this from now (default 4h)',
  SANDBOXPLANE_MAX_LIFETIME: 'no sandbox lives longer in total (default 24h)',
  SANDBOXPLANE_APPROVAL_TIMEOUT: 'how long a sandbox waits for an approver (default 1h)',
  SANDBOXPLANE_EXPIRY_WARNING: "how long before expiry the 'expiring' event is recorded (default 5m)",
  SANDBOXPLANE_HEALTH_INTERVAL: "how often the health watch checks a READY sandbox's emulator (default 30s)",
  SANDBOXPLANE_MOTO_IMAGE: 'moto image id (sha256:...), set by npm start; unset, no moto adapter',
  SANDBOXPLANE_FLOCI_IMAGE: 'Floci image by digest (floci/floci@sha256:...); unset, no Floci adapter',
  SANDBOXPLANE_EMULATOR_HEALTH_TIMEOUT: 'how long an emulator may take to pass its health check (default 60s)',
  SANDBOXPLANE_SWEEP_INTERVAL: 'how often the cleanup schedule runs the leak sweep (default 5m)',
  SANDBOXPLANE_PLANE_ID: "every container's io.sandboxplane.plane label (default derived from Temporal's cluster and namespace)",
  SANDBOXPLANE_WORKER_ROLES: 'all, or a comma list of lifecycle, store, docker (default all; docs/deploy.md)',
  SANDBOXPLANE_HOST_ID: "the docker role's host id; its queue is <task queue>-docker-<id> (default local)",
  SANDBOXPLANE_HOST_CAPACITY: "how many sandboxes the docker role's host takes at once (default 100)",
  SANDBOXPLANE_MAX_SANDBOXES: 'live sandbox containers the whole plane allows, warm pools included (default 500)',
  SANDBOXPLANE_PLACEMENT_WAIT: 'how long a sandbox waits for a host with room before NO_CAPACITY (default 2m)',
  SANDBOXPLANE_WARM_POOL: 'idle emulator containers each docker host keeps, e.g. moto=2 (default none)',
  SANDBOXPLANE_PRINCIPAL: 'who the CLI and sandboxctl mcp act as (an agent); unset, the CLI acts as an operator',
  SANDBOXPLANE_STORE_KEY_FILE: "the store role's key for approvers' TOTP secrets (default the SQLite file's path + .key)",
  SANDBOXPLANE_DEPLOYMENT: 'the Worker Deployment of the lifecycle workers (default sandboxplane)',
  SANDBOXPLANE_BUILD_ID: "the lifecycle workers' build id (default derived from the workflow code)",
  SANDBOXPLANE_CODEC_KEYS: 'payload encryption keys, keyId:base64key, comma-separated, the first encrypts',
  SANDBOXPLANE_CODEC_KEYS_FILE: 'a file of such keys, one a line (default .data/codec-keys, made by the first npm start or sandboxctl worker)',
});
