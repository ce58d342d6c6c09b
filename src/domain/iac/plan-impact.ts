/**
 * What each change of a plan does to its resource, in the reader's terms (DESIGN §14,
 * "What a plan must say"): replaced or updated in place, data lost, kept by Retain. The
 * verdicts come from the CloudFormation resource specification (create-only properties,
 * statefulness), never from a table written here; a replaced resource's new physical id
 * changes whatever refers to it, which is judged in turn, as `cdk diff` does.
 */
import { isJsonObject, SUB_REFERENCE } from './template';
import { requiresRecreation, type RequiresRecreation, type ResourceSpec } from './resource-spec';

/** CloudFormation's word for what a Modify does to the resource: `True` replaces it, `Conditional` may, `False` updates it in place. */
export type Replacement = 'True' | 'False' | 'Conditional';

/** A change as the diff found it, before its impact is judged. */
export interface DiffedChange {
  readonly action: 'Add' | 'Modify' | 'Remove';
  readonly logicalId: string;
  readonly type: string;
  readonly properties: readonly { readonly path: string; readonly before: unknown; readonly after: unknown }[];
}

/** A change with its impact judged (the §11 contract fields). */
export interface JudgedChange extends DiffedChange {
  readonly properties: readonly { readonly path: string; readonly before: unknown; readonly after: unknown; readonly requiresRecreation?: RequiresRecreation }[];
  readonly replacement: Replacement | null;
  readonly dataLoss: boolean;
  readonly retained: boolean;
}

/** Something the reviewer must know that is no change of its own. */
export interface PlanWarning {
  readonly logicalId: string;
  readonly code: string;
  readonly message: string;
}

/** Deletion policies that keep the resource when CloudFormation removes it from the stack. */
const KEEPS_RESOURCE: ReadonlySet<string> = new Set(['Retain', 'RetainExceptOnCreate']);
/**
 * The types whose `Snapshot` policy CloudFormation honours (its DeletionPolicy reference;
 * the resource specification does not carry it): for any other, Snapshot deletes the data.
 */
const SNAPSHOT_TYPES: ReadonlySet<string> = new Set([
  'AWS::EC2::Volume',
  'AWS::ElastiCache::CacheCluster',
  'AWS::ElastiCache::ReplicationGroup',
  'AWS::Neptune::DBCluster',
  'AWS::RDS::DBCluster',
  'AWS::RDS::DBInstance',
  'AWS::Redshift::Cluster',
]);

/** Whether `policy` keeps a `type` resource's data once CloudFormation removes or replaces it. */
const keepsData = (type: string, policy: string | undefined) => KEEPS_RESOURCE.has(policy ?? '') || (policy === 'Snapshot' && SNAPSHOT_TYPES.has(type));

/** Where a refreshed value is shown: it is known only once the replacement has run. */
export const KNOWN_AFTER_APPLY = '(known after apply)';

type Resources = Readonly<Record<string, unknown>>;

const policyOf = (resource: unknown, attribute: 'DeletionPolicy' | 'UpdateReplacePolicy'): string | undefined =>
  isJsonObject(resource) && typeof resource[attribute] === 'string' ? resource[attribute] : undefined;

function propertiesOf(resource: unknown): Readonly<Record<string, unknown>> {
  return isJsonObject(resource) && isJsonObject(resource.Properties) ? resource.Properties : {};
}

/** `Properties.KeySchema[0].AttributeName` → `KeySchema`; a path outside Properties names no property. */
function topProperty(path: string): string | undefined {
  return /^Properties\.([^.[]+)/.exec(path)?.[1];
}

function worst(a: Replacement, b: Replacement): Replacement {
  if (a === 'True' || b === 'True') return 'True';
  if (a === 'Conditional' || b === 'Conditional') return 'Conditional';
  return 'False';
}

const REPLACEMENT_OF: Readonly<Record<RequiresRecreation, Replacement>> = { Always: 'True', Conditionally: 'Conditional', Never: 'False' };

/** The logical ids a value refers to through `Ref`, `Fn::GetAtt` or `${Id}`/`${Id.Attribute}` in `Fn::Sub`. */
export function referencedIds(value: unknown, found: Set<string> = new Set(), depth = 0): Set<string> {
  if (depth > 200) return found;
  if (Array.isArray(value)) {
    for (const item of value) referencedIds(item, found, depth + 1);
    return found;
  }
  if (!isJsonObject(value)) return found;
  const keys = Object.keys(value);
  if (keys.length === 1) {
    const argument = value[keys[0] as string];
    if (keys[0] === 'Ref' && typeof argument === 'string') found.add(argument);
    if (keys[0] === 'Fn::GetAtt') {
      const id = typeof argument === 'string' ? argument.split('.')[0] : Array.isArray(argument) ? argument[0] : undefined;
      if (typeof id === 'string') found.add(id);
    }
    if (keys[0] === 'Fn::Sub') {
      const text = Array.isArray(argument) ? argument[0] : argument;
      if (typeof text === 'string')
        for (const [, reference] of text.matchAll(SUB_REFERENCE)) if (reference !== undefined && !reference.startsWith('!')) found.add(reference.split('.')[0] ?? '');
    }
  }
  for (const key of keys) referencedIds(value[key], found, depth + 1);
  return found;
}

/**
 * Judges every change: each Modify property's `requiresRecreation` and the change's
 * `replacement` from the specification; `dataLoss` for a stateful resource removed or
 * replaced without a policy that keeps it; `retained` for one removed from the stack and
 * kept. A replaced resource gets a new physical id, so every unchanged property of another
 * resource that refers to it changes at apply: those are added (shown `known after apply`)
 * and judged the same way, until nothing more is replaced.
 *
 * @param baseResources the resources of the stack as applied (resolved), for policies and references
 * @param nextResources the resources of the new template (resolved)
 */
export function judgeChanges(
  diffed: readonly DiffedChange[],
  input: { spec: ResourceSpec; baseResources: Resources; nextResources: Resources },
): { changes: JudgedChange[]; warnings: PlanWarning[] } {
  const { spec, baseResources, nextResources } = input;
  const byId = new Map<string, DiffedChange>(diffed.map((change) => [change.logicalId, change]));
  const warnings: PlanWarning[] = [];
  // Replaced resources found so far, and what each one's replacement is; the loop propagates until none is new.
  const replaced = new Map<string, Replacement>();
  const judgeModify = (change: DiffedChange): Replacement =>
    change.properties.reduce<Replacement>((verdict, property) => {
      const name = topProperty(property.path);
      return name === undefined ? verdict : worst(verdict, REPLACEMENT_OF[requiresRecreation(spec, change.type, name)]);
    }, 'False');
  for (const change of diffed) {
    const verdict = change.action === 'Modify' ? judgeModify(change) : 'False';
    if (verdict !== 'False') replaced.set(change.logicalId, verdict);
  }

  for (let pending = [...replaced.keys()]; pending.length > 0;) {
    const next: string[] = [];
    for (const [logicalId, resource] of Object.entries(nextResources)) {
      const change = byId.get(logicalId);
      if (change !== undefined && change.action !== 'Modify') continue;
      const type = isJsonObject(resource) && typeof resource.Type === 'string' ? resource.Type : '';
      const shown = new Set(change?.properties.map((property) => topProperty(property.path)) ?? []);
      const refreshed: { path: string; before: unknown; after: unknown }[] = [];
      let upstream: Replacement = 'False';
      for (const [name, value] of Object.entries(propertiesOf(resource))) {
        const refersTo = [...referencedIds(value)].filter((id) => replaced.has(id));
        if (refersTo.length === 0 || shown.has(name)) continue;
        const certain = refersTo.some((id) => replaced.get(id) === 'True');
        upstream = worst(upstream, certain ? 'True' : 'Conditional');
        refreshed.push({ path: `Properties.${name}`, before: value, after: KNOWN_AFTER_APPLY });
        const which = refersTo.length === 1 ? `${refersTo[0] as string}, which is` : `${refersTo.join(', ')}, which are`;
        warnings.push({
          logicalId,
          code: 'REFERENCE_REPLACED',
          message: `${logicalId}.Properties.${name} refers to ${which} ${certain ? '' : 'possibly '}replaced: its value changes at apply`,
        });
      }
      if (refreshed.length === 0) continue;
      const merged: DiffedChange = {
        action: 'Modify',
        logicalId,
        type,
        properties: [...(change?.properties ?? []), ...refreshed].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)),
      };
      byId.set(logicalId, merged);
      // A "may be replaced" upstream makes every downstream verdict a "may".
      const verdict = judgeModify(merged);
      const downstream: Replacement = upstream === 'True' || verdict === 'False' ? verdict : 'Conditional';
      if (downstream === 'False') continue;
      const was = replaced.get(logicalId);
      const now = was === undefined ? downstream : worst(was, downstream);
      if (now !== was) {
        replaced.set(logicalId, now);
        next.push(logicalId);
      }
    }
    pending = next;
  }

  const changes = [...byId.values()]
    .sort((a, b) => (a.logicalId < b.logicalId ? -1 : a.logicalId > b.logicalId ? 1 : 0))
    .map((change): JudgedChange => {
      const stateful = spec.type(change.type)?.stateful === true;
      if (change.action === 'Add') return { ...change, replacement: null, dataLoss: false, retained: false };
      if (change.action === 'Remove') {
        const policy = policyOf(baseResources[change.logicalId], 'DeletionPolicy');
        return { ...change, replacement: null, dataLoss: stateful && !keepsData(change.type, policy), retained: KEEPS_RESOURCE.has(policy ?? '') };
      }
      const replacement = replaced.get(change.logicalId) ?? 'False';
      const policy = policyOf(nextResources[change.logicalId], 'UpdateReplacePolicy');
      const replacing = replacement !== 'False';
      return {
        ...change,
        properties: change.properties.map((property) => {
          const name = topProperty(property.path);
          return { ...property, requiresRecreation: name === undefined ? 'Never' : requiresRecreation(spec, change.type, name) };
        }),
        replacement,
        dataLoss: replacing && stateful && !keepsData(change.type, policy),
        retained: replacing && KEEPS_RESOURCE.has(policy ?? ''),
      };
    });
  warnings.push(...namesKeptByNewIds(changes, baseResources, nextResources, spec));
  for (const change of changes) {
    if (spec.type(change.type) === undefined && change.action !== 'Add') {
      warnings.push({ logicalId: change.logicalId, code: 'TYPE_NOT_IN_SPECIFICATION', message: `${change.type} is not in ${spec.source}: whether it is replaced or holds data is unknown` });
    }
  }
  return { changes, warnings };
}

/**
 * A logical id renamed while the name it gives its resource stays: CloudFormation creates
 * the new one before it deletes the old, so the create finds the name taken and fails.
 */
function namesKeptByNewIds(changes: readonly JudgedChange[], baseResources: Resources, nextResources: Resources, spec: ResourceSpec): PlanWarning[] {
  const removed = changes.filter((change) => change.action === 'Remove');
  return changes
    .filter((change) => change.action === 'Add')
    .flatMap((added) =>
      removed
        .filter((gone) => gone.type === added.type)
        .flatMap((gone) => {
          const names = Object.entries(spec.type(added.type)?.replaces ?? {}).filter(([name, verdict]) => verdict === 'Always' && name.endsWith('Name'));
          const kept = names.find(([name]) => {
            const [before, after] = [propertiesOf(baseResources[gone.logicalId])[name], propertiesOf(nextResources[added.logicalId])[name]];
            return typeof after === 'string' && after === before;
          });
          if (kept === undefined) return [];
          return [
            {
              logicalId: added.logicalId,
              code: 'NAME_KEPT_BY_NEW_ID',
              message: `${added.logicalId} takes ${kept[0]} ${JSON.stringify(propertiesOf(nextResources[added.logicalId])[kept[0]])} from ${gone.logicalId}, which this change removes: CloudFormation creates ${added.logicalId} first and finds the name taken`,
            },
          ];
        }),
    );
}
