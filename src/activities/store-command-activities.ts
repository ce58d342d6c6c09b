import { SandboxPlaneError } from '../domain/errors';
import type { FeatureFlags } from '../domain/feature-flags';
import { screenIacRun } from '../domain/iac/iac-screening';
import { capabilityOfEnvironment } from '../domain/targets';
import { storeCommandSchema, type StoreCommand, type StoreCommandKind, type StoreCommandResults } from '../domain/store-commands';
import { parseOrThrow } from '../domain/validation';
import type { Store } from '../store';
import type { HostDirectory } from '../store/host-directory';
import type { SecretBox } from '../crypto/secret-box';
import { withTaxonomy } from './activity-failure';
import { enrolApprover } from './approver-proof';
import { activityCancellation, readEvents } from './event-activities';
import { deleteSnapshot } from './snapshot-activities';
import { addWebhook } from './webhook-activities';

export interface StoreCommandDeps {
  readonly store: Store;
  readonly hosts: HostDirectory;
  /** The store's key for approvers' TOTP secrets. */
  readonly secrets: SecretBox;
  /** The worker's feature flags, for screening IaC runs before they start. */
  readonly flags: FeatureFlags;
}

function unknownTarget(name: string): SandboxPlaneError {
  return new SandboxPlaneError('NOT_FOUND', `no target ${name}`, { hint: '`sandboxctl targets list` shows the targets.', details: { target: name } });
}

function unknownWebhook(webhookId: string): SandboxPlaneError {
  return new SandboxPlaneError('NOT_FOUND', `no webhook ${webhookId}`, { hint: '`sandboxctl webhooks list` shows the endpoints.', details: { webhookId } });
}

type Handlers = { [K in StoreCommandKind]: (command: Extract<StoreCommand, { kind: K }>) => Promise<StoreCommandResults[K]> | StoreCommandResults[K] };

/**
 * The store role's one caller-facing activity: it runs a caller's command against the
 * SQLite projection (the single writer) and the host registry. The command is checked
 * again here: a workflow started by hand (UI, `temporal workflow start`) is not trusted.
 */
export function createStoreCommandActivities(deps: StoreCommandDeps): { runStoreCommand(command: unknown): Promise<unknown> } {
  const { store, hosts, secrets, flags } = deps;
  const handlers: Handlers = {
    'policy.add': ({ kind: _kind, ...policy }) => store.policies.add(policy),
    'policy.list': () => ({ policies: store.policies.list() }),
    'policy.remove': ({ id }) => store.policies.remove(id),
    'approvers.add': ({ name, recipient }) => store.sandboxes.atomically(() => enrolApprover(store, secrets, { name, recipient })),
    'approvers.list': () => ({ approvers: store.approvers.list() }),
    'approvers.remove': ({ name }) => {
      const removed = store.approvers.remove(name);
      if (removed === undefined) {
        throw new SandboxPlaneError('NOT_FOUND', `${name} is not a listed approver`, { hint: '`sandboxctl approvers list` shows who is.' });
      }
      return removed;
    },
    audit: ({ sandboxId, principal }) => {
      const owner = store.sandboxes.principalOf(sandboxId);
      if (owner === undefined || (principal !== undefined && owner !== principal)) {
        throw new SandboxPlaneError('NOT_FOUND', `no sandbox ${sandboxId} in the projection`, {
          hint: 'Check the id (`sandboxctl list` shows the sandboxes).',
          details: { sandboxId },
        });
      }
      return { sandboxId, operations: store.sandboxes.audit(sandboxId) };
    },
    'audit.verify': () => store.auditChain.verify(),
    'audit.export': ({ after, since, limit }) => store.auditChain.exportPage({ after, since, limit }),
    leaks: () => ({ leaks: store.leaks.outstanding() }),
    hosts: async () => ({ hosts: await hosts.list() }),
    'hosts.register': ({ registration }) => hosts.register(registration),
    'hosts.remove': ({ hostId }) => hosts.remove(hostId),
    'targets.add': ({ kind: _kind, ...target }) => store.targets.add(target),
    'targets.list': () => ({ targets: store.targets.list() }),
    'keys.add': ({ kind: _kind, ...key }) => {
      const added = store.apiKeys.add(key);
      if (added === undefined) throw new SandboxPlaneError('INVALID_STATE', `key id ${key.keyId} is taken by another key`, { hint: 'Run `sandboxctl keys add` again: it draws a new id.' });
      return added;
    },
    'keys.list': () => ({ keys: store.apiKeys.list() }),
    events: (command) => readEvents(store, command, activityCancellation()),
    'keys.revoke': ({ keyId }) => {
      const revoked = store.apiKeys.revoke(keyId);
      if (revoked === undefined) throw new SandboxPlaneError('NOT_FOUND', `no API key ${keyId}`, { hint: '`sandboxctl keys list` shows the keys.' });
      return revoked;
    },
    'snapshots.list': ({ principal, sandboxId }) => ({ snapshots: store.snapshots.list(principal, sandboxId) }),
    'snapshots.get': ({ principal, snapshotId }) => {
      const snapshot = store.snapshots.find(snapshotId, principal);
      if (snapshot === undefined) throw new SandboxPlaneError('NOT_FOUND', `${principal} holds no snapshot ${snapshotId}`, { hint: '`sandboxctl snapshots` lists yours.' });
      return snapshot;
    },
    'iac.screen': ({ principal, services, target }) => {
      // An unknown target is the run's to report (NOT_FOUND, with its hint): let it start.
      const registered = target === undefined ? undefined : store.targets.get(target);
      if (target !== undefined && registered === undefined) return { effect: 'allow', reasons: [] };
      const capability = registered === undefined ? 'cloud.iac.local' : capabilityOfEnvironment(registered.environment);
      return screenIacRun({ principal, capability, flags, policies: store.policies.list(), plan: { services, dataLoss: [] } });
    },
    'snapshots.delete': ({ snapshotId, principal, actor }) =>
      deleteSnapshot(store, { snapshotId, principal, actor: actor ?? principal ?? 'operator', reason: principal === undefined ? 'by an operator' : 'by its owner' }),
    'sandboxes.tree': ({ sandboxId, principal }) => {
      const root = store.sandboxes.lineageOf(sandboxId)?.root ?? sandboxId;
      const sandboxIds = store.sandboxes.principalOf(sandboxId) === undefined ? [] : store.sandboxes.tree(root, principal);
      if (!sandboxIds.includes(sandboxId)) {
        throw new SandboxPlaneError('NOT_FOUND', `no sandbox ${sandboxId} in the projection`, { hint: 'Check the id (`sandboxctl list` shows the sandboxes).', details: { sandboxId } });
      }
      return { root, sandboxIds };
    },
    'webhooks.add': ({ webhookId, url, kinds, principal, recipient }) => store.sandboxes.atomically(() => addWebhook(store, secrets, { webhookId, url, kinds, principal, recipient })),
    'webhooks.list': () => ({ webhooks: store.webhooks.list() }),
    'webhooks.remove': ({ webhookId }) => {
      const removed = store.webhooks.remove(webhookId);
      if (removed === undefined) throw unknownWebhook(webhookId);
      return removed;
    },
    'webhooks.deliveries': ({ webhookId, limit }) => {
      const deliveries = store.webhooks.deliveries(webhookId, limit);
      if (deliveries === undefined) throw unknownWebhook(webhookId);
      return { webhookId, deliveries };
    },
    usage: ({ principal, since }) => ({ rows: store.usage.rollUp({ ...(principal !== undefined ? { principal } : {}), ...(since !== undefined ? { since } : {}) }) }),
    'targets.remove': ({ name }) => store.targets.remove(name),
    'targets.get': ({ name }) => {
      const target = store.targets.get(name);
      if (target === undefined) throw unknownTarget(name);
      return target;
    },
    'targets.audit': ({ name }) => {
      const operations = store.targets.audit(name);
      // A removed target keeps its trail; only a name the store has never seen is unknown.
      if (operations.length === 0 && store.targets.get(name) === undefined) throw unknownTarget(name);
      return { target: name, operations };
    },
  };

  return {
    async runStoreCommand(input: unknown): Promise<unknown> {
      return withTaxonomy(async () => {
        const command = parseOrThrow(storeCommandSchema, input, 'store command');
        const handle = handlers[command.kind] as (command: StoreCommand) => Promise<unknown> | unknown;
        return handle(command);
      });
    },
  };
}
