/**
 * NoEcho parameter values as they travel (DESIGN §14: never in clear in history, the UI,
 * logs, SQLite or a digest a reviewer could test guesses against). The caller's side seals
 * each one (src/crypto/parameter-seal.ts) into text of this shape:
 *
 *   sandboxplane-sealed:v1:<keyId>:<mac>:<iv>:<tag>:<ciphertext>
 *
 * where `mac` is a keyed HMAC of the value. Only the IaC steps open it; digests cover the
 * MAC alone (the ciphertext's fresh IV would make every send another request). Pure.
 */
import { isJsonObject, type CfnTemplate } from './template';

export const SEALED_PARAMETER_PREFIX = 'sandboxplane-sealed:v1:';

const SEALED_SHAPE = /^sandboxplane-sealed:v1:([A-Za-z0-9._-]{1,64}):([A-Za-z0-9_-]{43}):([A-Za-z0-9_-]{16}):([A-Za-z0-9_-]{22}):([A-Za-z0-9_-]*)$/;

/** A sealed value's parts; undefined when `text` is not one. */
export function sealedParts(text: string): { keyId: string; mac: string; iv: string; tag: string; ciphertext: string } | undefined {
  const match = SEALED_SHAPE.exec(text);
  if (match === null) return undefined;
  const [, keyId, mac, iv, tag, ciphertext] = match as unknown as [string, string, string, string, string, string];
  return { keyId, mac, iv, tag, ciphertext };
}

export function isSealedParameterValue(text: string): boolean {
  return sealedParts(text) !== undefined;
}

/** The parameters as digests bind them: a sealed value by its key id and MAC only. */
export function parametersForDigest(parameters: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(parameters).map(([name, value]) => {
      const parts = sealedParts(value);
      return [name, parts === undefined ? value : `${SEALED_PARAMETER_PREFIX}${parts.keyId}:${parts.mac}`];
    }),
  );
}

/** The names of a template's NoEcho parameters. */
export function noEchoParameters(template: CfnTemplate): string[] {
  const declarations = isJsonObject(template.Parameters) ? template.Parameters : {};
  return Object.entries(declarations)
    .filter(([, declaration]) => isJsonObject(declaration) && String(declaration.NoEcho).toLowerCase() === 'true')
    .map(([name]) => name);
}

/** NoEcho parameters given in clear: a run refuses them (a caller that cannot seal must not send them). */
export function unsealedNoEchoParameters(template: CfnTemplate, parameters: Readonly<Record<string, string>>): string[] {
  return noEchoParameters(template).filter((name) => Object.hasOwn(parameters, name) && !isSealedParameterValue(parameters[name] as string));
}

/**
 * Parameters whose values a run cannot take as they are: a NoEcho value in clear (a caller
 * that cannot seal must not send it), and sealed text for a parameter that is not NoEcho
 * (opening it would show a secret copied from another run in clear). Problems in words.
 */
export function sealingProblems(template: CfnTemplate, parameters: Readonly<Record<string, string>>): string[] {
  const secret = new Set(noEchoParameters(template));
  const clear = unsealedNoEchoParameters(template, parameters);
  const misplaced = Object.entries(parameters)
    .filter(([name, value]) => !secret.has(name) && isSealedParameterValue(value))
    .map(([name]) => name);
  return [
    ...(clear.length > 0 ? [`NoEcho ${clear.join(', ')} arrived in clear; sandboxctl and the SDK seal them with the plane's payload codec keys`] : []),
    ...(misplaced.length > 0 ? [`${misplaced.join(', ')} carry sealed values but are not NoEcho: only a NoEcho parameter's value is opened`] : []),
  ];
}
