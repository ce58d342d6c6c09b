/** A time as the lifecycle's texts show it. */
export function iso(ms: number): string {
  return new Date(ms).toISOString();
}
