/**
 * Sizes as people write them in settings (`10m`, `512k`, `1g`, or bytes) and as the CLI
 * shows them. Units are powers of 1024, as Docker reads its own `max-size` and `--memory`.
 */

const UNITS: Readonly<Record<string, number>> = Object.freeze({ '': 1, b: 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 });

const SIZE = /^(?<number>[0-9]{1,15})\s*(?<unit>[kmg]?)(?:i?b)?$/i;

/** `10m` → 10485760; `undefined` for anything that is not a whole number with an optional k, m or g. */
export function parseByteSize(text: string): number | undefined {
  const match = SIZE.exec(text.trim());
  if (match?.groups === undefined) return undefined;
  const bytes = Number(match.groups.number) * (UNITS[(match.groups.unit ?? '').toLowerCase()] ?? 1);
  return Number.isSafeInteger(bytes) ? bytes : undefined;
}

/** 536870912 → `512 MiB`; 1.5 GiB keeps one decimal. */
export function formatBytes(bytes: number): string {
  for (const [unit, size] of [
    ['GiB', 1024 ** 3],
    ['MiB', 1024 ** 2],
    ['KiB', 1024],
  ] as const) {
    if (bytes >= size) {
      const value = bytes / size;
      return `${Number.isInteger(value) ? value : value.toFixed(1)} ${unit}`;
    }
  }
  return `${bytes} B`;
}
