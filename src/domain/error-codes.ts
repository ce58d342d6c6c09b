/**
 * The one taxonomy of error codes (DESIGN §6). Each code says whether a retry can
 * help, which CLI exit class it falls in, and what a person should do about it.
 * Codes are contracts: add new ones, never rename.
 */

/** Exit classes of DESIGN §11: 1 unexpected failure, 2 invalid input, 3 refused, 4 not found. */
export type ErrorCategory = 'failure' | 'invalid' | 'refused' | 'not_found';

export interface ErrorCodeSpec {
  readonly category: ErrorCategory;
  readonly retryable: boolean;
  readonly hint: string;
}

function spec(category: ErrorCategory, retryable: boolean, hint: string): ErrorCodeSpec {
  return { category, retryable, hint };
}

export const ERROR_CODES = {
  // Input and configuration
  INVALID_INPUT: spec('invalid', false, 'Fix the named field and try again.'),
  CONFIG_INVALID: spec('invalid', false, 'Fix or unset the named environment variables and try again.'),
  PAYLOAD_UNDECRYPTABLE: spec(
    'failure',
    false,
    'Give this process the key the payload was encrypted with: the same SANDBOXPLANE_CODEC_KEYS or SANDBOXPLANE_CODEC_KEYS_FILE as the workers, old keys kept after the current one (docs/security.md#payload-encryption).',
  ),

  // Local state
  STORE_VERSION_TOO_NEW: spec('failure', false, 'This database was written by a newer cloud-sandbox-plane: upgrade this installation, or point SANDBOXPLANE_DB at another file.'),
  STORE_UNAVAILABLE: spec('failure', true, 'Check that SANDBOXPLANE_DB names a writable file on a local disk.'),
  STORE_CONFLICT: spec('refused', false, 'Run exactly one store worker per plane (`sandboxctl hosts` and `sandboxctl doctor` show who polls).'),

  // Temporal
  TEMPORAL_UNREACHABLE: spec('failure', true, 'Start a server with `sandboxctl dev`, or set TEMPORAL_ADDRESS to one that runs.'),
  GATEWAY_UNREACHABLE: spec('failure', true, 'Check the gateway URL, and that `sandboxctl gateway` runs there.'),
  TEMPORAL_CLI_MISSING: spec('failure', false, 'Run `npm run setup` (needs Go >= 1.25), or put the temporal CLI v1.5.1 on PATH, or set SANDBOXPLANE_TEMPORAL_CLI to its path.'),
  DEV_SERVER_FAILED: spec('failure', false, 'Read the server output above; a port in use is the usual cause (choose others with --port and --ui-port).'),

  // Docker broker
  DOCKER_UNREACHABLE: spec('failure', true, 'Start the engine with `bash scripts/docker-engine.sh`, or set DOCKER_HOST to the socket of one that runs.'),
  DOCKER_IMAGE_MISSING: spec('failure', false, 'Build or load the image on this engine (nothing is pulled); `docker image ls` shows what it has.'),
  DOCKER_ENGINE_ERROR: spec('failure', true, 'The engine failed; its log usually says why. Retrying may help.'),
  DOCKER_REQUEST_REJECTED: spec('invalid', false, 'The engine refused the request as malformed; fix the named value.'),
  DOCKER_RESPONSE_INVALID: spec('failure', false, 'The engine answered in a shape the broker does not understand; check the engine version.'),
  CONTAINER_NOT_FOUND: spec('not_found', false, 'The container is gone; list containers by label to see what remains.'),
  CONTAINER_CONFLICT: spec('failure', false, 'Another container holds that name or the container is in a state that forbids this; inspect it, then remove it or choose another name.'),
  CONTAINER_NOT_RUNNING: spec('failure', false, 'The container stopped on its own; read its logs (`docker logs ID`).'),
  SPEC_INVALID: spec('refused', false, 'Fix the container spec fields named in the message.'),
  SPEC_IMAGE_NOT_PINNED: spec('refused', false, 'Pin the image by digest (name@sha256:…) or image id (sha256:…), or add the exact reference to the image allowlist.'),
  SPEC_PRIVILEGED: spec('refused', false, 'Remove `privileged`: sandboxes never run privileged.'),
  SPEC_CAPABILITY_ADDED: spec('refused', false, 'Remove `capAdd`: sandboxes get no capabilities beyond the engine default.'),
  SPEC_HOST_NAMESPACE: spec('refused', false, 'Remove the host or container: namespace mode; sandboxes get their own namespaces.'),
  SPEC_DEVICES: spec('refused', false, 'Remove `devices`: sandboxes get no host devices.'),
  SPEC_LIMITS_MISSING: spec(
    'refused',
    false,
    'Set limits.memoryBytes (at least 6 MiB), limits.pidsLimit (at least 1), limits.nanoCpus (at least 0.01 CPU), limits.logFiles (1 to 20) and limits.logMaxBytes (at least 64 KiB a file).',
  ),
  SPEC_NETWORK_NOT_SEALED: spec(
    'refused',
    false,
    "Leave networkMode out (or name the sandbox's own network): every sandbox gets a network of its own, with no traffic to other containers or out.",
  ),
  SPEC_CAPABILITIES_NOT_DROPPED: spec('refused', false, "Leave capDrop out or include 'ALL': sandboxes run with no capabilities."),
  SPEC_RESTART_POLICY: spec('refused', false, "Use restart policy 'no' (or leave it out): the sandbox lifecycle decides when a container runs."),
  SPEC_LABELS_MISSING: spec('refused', false, 'Set the labels io.sandboxplane.managed-by=cloud-sandbox-plane, io.sandboxplane.sandbox-id and io.sandboxplane.adapter.'),
  SPEC_PORT_INVALID: spec('refused', false, 'Ports are numbers: containerPort 1-65535, hostPort 0-65535 (0 lets the engine choose).'),
  SPEC_PORT_NOT_LOOPBACK: spec('refused', false, "Publish ports on hostIp '127.0.0.1' (or leave hostIp out)."),
  SPEC_BIND_FORBIDDEN: spec('refused', false, 'Bind only an absolute host directory outside the Docker socket, system and home directories (see docs/security.md).'),

  // Sandbox lifecycle: refusals at screening, approval and later
  FLAG_DISABLED: spec('refused', false, 'An operator must turn the named SANDBOXPLANE_FLAG_* on for the worker.'),
  POLICY_DENIED: spec('refused', false, 'Ask an operator for a policy row: `sandboxctl policy add --principal P --capability C --effect allow`.'),
  SERVICE_UNKNOWN: spec('refused', false, "Use services from the adapter's catalog (docs/lifecycle.md lists them)."),
  SERVICE_NOT_ALLOWED: spec('refused', false, 'Drop the named services, or ask an operator for a policy row that covers them.'),
  TTL_EXCEEDS_CEILING: spec('refused', false, 'Ask for a shorter --ttl, at most the ceiling named in the message.'),
  QUOTA_EXCEEDED: spec(
    'refused',
    false,
    'You hold all your quota allows: destroy a live sandbox (`sandboxctl list`) or delete a snapshot (`sandboxctl snapshots delete ID`), or ask an operator for a higher limit.',
  ),
  ADAPTER_UNAVAILABLE: spec('refused', false, 'Choose an adapter a docker host runs (`sandboxctl hosts`; --adapter memory|moto|floci) or ask an operator to enable it.'),
  HOST_IN_USE: spec('refused', false, 'A host is retired only once no docker worker serves it and none of its sandboxes is left (`sandboxctl hosts`).'),
  NO_CAPACITY: spec(
    'refused',
    false,
    'Every docker host that runs this adapter is full (of sandboxes or of memory) or down (`sandboxctl hosts`): destroy a sandbox, or ask an operator for a host or a higher --capacity.',
  ),
  APPROVAL_DENIED: spec('refused', false, 'A reviewer denied the request; read the reason and ask again with a changed request.'),
  APPROVAL_EXPIRED: spec('refused', false, 'Nobody approved in time; ask again, and ask a reviewer to look at the Temporal UI.'),
  APPROVER_NOT_ALLOWED: spec('refused', false, 'Approvals come from a listed approver (`sandboxctl approvers list`) who is not the requester.'),
  PRINCIPAL_MISMATCH: spec(
    'refused',
    false,
    'This caller acts for one principal (MCP --principal, SANDBOXPLANE_PRINCIPAL): leave the principal out, or use a caller started for the other one.',
  ),
  APPROVAL_UNVERIFIED: spec(
    'refused',
    false,
    'An approval needs the approver\'s current code from their authenticator: `--code NNNNNN` (CLI) or `"code": "NNNNNN"` in the signal payload; each code counts once.',
  ),
  IDEMPOTENCY_CONFLICT: spec('refused', false, 'This id was used for a different request: choose a new --id, or repeat the original request exactly.'),
  UNAUTHENTICATED: spec('refused', false, 'Send `Authorization: Bearer KEY` with an API key an operator made for you (`sandboxctl keys add PRINCIPAL`) that is not revoked.'),
  RATE_LIMITED: spec('refused', false, 'Too many of these requests in a short time: wait (the message says how long), or ask for more at once (one larger --ttl).'),
  INVALID_STATE: spec('refused', false, 'The sandbox is not in a state that allows this; `sandboxctl status ID` shows its state.'),
  PROVISION_FAILED: spec('failure', false, 'Provisioning failed and was rolled back; the audit trail (`sandboxctl audit ID`) says why.'),
  PROVISION_UNAVAILABLE: spec('failure', true, 'The emulator runtime was not reachable; the activity retries on its own.'),
  DESTROY_FAILED: spec('failure', true, 'Teardown failed; the leak is recorded and the cleanup sweep retries it.'),
  RUNTIME_ON_OTHER_ENGINE: spec(
    'failure',
    true,
    "The sandbox's containers run on the Docker engine named in the message, not on this worker's: run a worker whose DOCKER_HOST reaches that engine (`docker info --format '{{.ID}}'` shows an engine's ID), then destroy again.",
  ),
  EMULATOR_UNHEALTHY: spec('failure', false, 'The emulator never passed its health check and was removed; its container logs say why (run it by hand to see them).'),
  EMULATOR_DIED: spec('failure', false, 'The emulator died while READY, again after one restart, so the sandbox was torn down; everything in it is lost. Create a new sandbox.'),
  RUN_CONTINUED: spec('failure', true, 'The sandbox moved to a fresh workflow run to keep its history short; send the request again (the SDK and CLI do this for you).'),
  RESOURCE_DISCOVERY_FAILED: spec('failure', true, 'The emulator could not say what it holds; treat its inventory as unknown, not as empty.'),
  RESOURCES_PARTIAL: spec('failure', false, 'Some services could not be listed (named in the message): what was listed is real, the rest is unknown. `sandboxctl resources ID` shows both.'),
  WAIT_TIMEOUT: spec('failure', true, 'The sandbox is still working; check `sandboxctl status ID`, or wait longer.'),
  PROMOTION_REFUSED: spec(
    'refused',
    false,
    '`sandboxctl deployment` lists the builds with their pollers and open runs: start a lifecycle worker of the build first (`sandboxctl worker --role lifecycle --build-id B`), and let runs of a release before Worker Versioning end (docs/deploy.md, "Rolling out").',
  ),

  PLAN_STALE: spec(
    'refused',
    false,
    'The approval or apply names another plan than the one the run holds: read the plan again (`sandboxctl iac status RUN_ID`) and approve its digest, or plan the changed template anew.',
  ),

  PROOF_MISSING: spec(
    'refused',
    false,
    'A target takes only what worked in a sandbox: apply the same template and parameters in one of your sandboxes (`sandboxctl iac apply SANDBOX_ID --template FILE --wait`) until it is APPLIED with every resource verified, then promote it within 24 h.',
  ),

  IAC_APPLY_FAILED: spec(
    'failure',
    false,
    'The stack does not hold what the plan said: `sandboxctl iac status RUN_ID` lists what it held, resource by resource, and whether the sandbox was put back as it was before (an emulator does not roll back; the plane does from its checkpoint). Fix the template and apply again.',
  ),

  SNAPSHOT_UNSUPPORTED: spec(
    'refused',
    false,
    "This sandbox's emulator cannot be snapshotted (the message says why): use a moto sandbox (`sandboxctl create --adapter moto`) for state you want to keep, fork or pause.",
  ),
  SNAPSHOT_TOO_LARGE: spec(
    'refused',
    false,
    "The sandbox's recorded state is over the plane's snapshot cap (SANDBOXPLANE_SNAPSHOT_MAX_BYTES compressed, default 32m; a moto recording holds 24 MiB as it writes it): keep large objects out of the sandbox you snapshot (docs/snapshots.md).",
  ),
  SNAPSHOT_CORRUPT: spec(
    'failure',
    false,
    "The snapshot's kept content is missing, cut short or not sealed with this plane's codec keys (SANDBOXPLANE_SNAPSHOT_DIR, SANDBOXPLANE_CODEC_KEYS): every docker host and the store must share that directory and those keys. Take the snapshot again.",
  ),

  AUDIT_TAMPERED: spec(
    'refused',
    false,
    'The audit trail does not verify from the row named on: treat what it records from there as untrusted, restore the SQLite file from a backup that verifies, and find who wrote to it past the store (docs/audit-evidence.md).',
  ),

  // Lookups
  NOT_FOUND: spec('not_found', false, 'Check the id; `sandboxctl list` shows the known ones.'),

  // Anything we did not foresee
  INTERNAL: spec('failure', false, 'This is a bug: report it with the command and its output.'),
} as const satisfies Record<string, ErrorCodeSpec>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** CLI exit code for each category (DESIGN §11). */
export const EXIT_CODE_BY_CATEGORY: Readonly<Record<ErrorCategory, number>> = Object.freeze({
  failure: 1,
  invalid: 2,
  refused: 3,
  not_found: 4,
});

/** Error types that activity retry policies must never retry. */
export const NON_RETRYABLE_ERROR_TYPES: readonly ErrorCode[] = Object.freeze((Object.keys(ERROR_CODES) as ErrorCode[]).filter((code) => !ERROR_CODES[code].retryable));

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.prototype.hasOwnProperty.call(ERROR_CODES, value);
}
