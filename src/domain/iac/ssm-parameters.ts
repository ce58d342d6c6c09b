/**
 * SSM-typed parameters (`AWS::SSM::Parameter::Value<…>`): their value is the name of an SSM
 * parameter, which CloudFormation reads at every apply. The plan cannot know the value, but
 * it knows which SSM parameter: a `Ref` to one is shown as that, so pointing at another SSM
 * parameter is a change, and the same one is flagged as read at apply. Pure.
 */
import type { EvaluatedTemplate } from './template-evaluation';
import { isJsonObject, type CfnTemplate } from './template';
import type { PlanWarning } from './plan-impact';

const SSM_PARAMETER_TYPE = 'AWS::SSM::Parameter::Value<';

/** Each SSM-typed parameter's shown value: `(SSM parameter <name>, read at apply)`. */
function ssmShown(template: CfnTemplate, given: Readonly<Record<string, string>>): Map<string, string> {
  const declarations = isJsonObject(template.Parameters) ? template.Parameters : {};
  const shown = new Map<string, string>();
  for (const [name, declaration] of Object.entries(declarations)) {
    if (!isJsonObject(declaration) || typeof declaration.Type !== 'string' || !declaration.Type.startsWith(SSM_PARAMETER_TYPE)) continue;
    const path = Object.hasOwn(given, name) ? given[name] : typeof declaration.Default === 'string' ? declaration.Default : undefined;
    if (path !== undefined) shown.set(name, `(SSM parameter ${path}, read at apply)`);
  }
  return shown;
}

function replaceRefs(value: unknown, shown: ReadonlyMap<string, string>, used: Set<string>, depth = 0): unknown {
  if (depth > 300) return value;
  if (Array.isArray(value)) return value.map((item) => replaceRefs(item, shown, used, depth + 1));
  if (!isJsonObject(value)) return value;
  const keys = Object.keys(value);
  if (keys.length === 1 && keys[0] === 'Ref' && typeof value.Ref === 'string' && shown.has(value.Ref)) {
    used.add(value.Ref);
    return shown.get(value.Ref);
  }
  return Object.fromEntries(keys.map((key) => [key, replaceRefs(value[key], shown, used, depth + 1)]));
}

/**
 * `evaluated` with every `Ref` to an SSM-typed parameter shown as the SSM parameter it
 * names, and a warning for each resource that uses one.
 */
export function showSsmParameters(template: CfnTemplate, given: Readonly<Record<string, string>>, evaluated: EvaluatedTemplate): { evaluated: EvaluatedTemplate; warnings: PlanWarning[] } {
  const shown = ssmShown(template, given);
  if (shown.size === 0) return { evaluated, warnings: [] };
  const warnings: PlanWarning[] = [];
  const resources = Object.fromEntries(
    Object.entries(evaluated.resources).map(([logicalId, entry]) => {
      const used = new Set<string>();
      const resource = replaceRefs(entry.resource, shown, used) as Record<string, unknown>;
      for (const name of [...used].sort()) {
        warnings.push({
          logicalId,
          code: 'SSM_READ_AT_APPLY',
          message: `${logicalId} uses ${shown.get(name) as string} through parameter ${name}: its value may change at any apply, template or not`,
        });
      }
      return [logicalId, { ...entry, resource }];
    }),
  );
  const outputs = Object.fromEntries(
    Object.entries(evaluated.outputs).map(([name, output]) => [
      name,
      { ...output, value: replaceRefs(output.value, shown, new Set()), ...(output.exportName === undefined ? {} : { exportName: replaceRefs(output.exportName, shown, new Set()) }) },
    ]),
  );
  return { evaluated: { ...evaluated, resources, outputs }, warnings };
}
