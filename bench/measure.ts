import { performance } from 'node:perf_hooks';

export function median(values: readonly number[]): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/** Wall milliseconds `work` took. */
export async function timed(work: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await work();
  return performance.now() - started;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * `rounds` rounds of the baseline and the measured work, one after the other (never at
 * once), so a machine that slows down or speeds up during the run slows both alike.
 * Each side returns the milliseconds that count (its clean-up may come after, untimed);
 * the result holds them in round order.
 */
export async function alternate(
  rounds: number,
  baseline: (round: number) => Promise<number>,
  measured: (round: number) => Promise<number>,
): Promise<{ baseline: number[]; measured: number[] }> {
  const result = { baseline: [] as number[], measured: [] as number[] };
  for (let round = 0; round < rounds; round += 1) {
    result.baseline.push(await baseline(round));
    result.measured.push(await measured(round));
  }
  return result;
}

/** A number with at most `digits` decimals, for JSON that people read. */
export function rounded(value: number, digits = 1): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}
