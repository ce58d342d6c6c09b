/** Quotes a value for a Temporal visibility query (`SandboxPrincipal = 'agent-7'`). */
export function quoted(value: string): string {
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}
