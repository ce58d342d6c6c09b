import { performance } from 'node:perf_hooks';

/**
 * The `p`th percentile (0–100) of `values` by linear interpolation between the two
 * closest ranks (Hyndman & Fan type 7, numpy's and Excel's default): rank `(n − 1)·p/100`
 * of the sorted values, so p50 is exactly the median, p0 the minimum and p100 the
 * maximum. NaN for no values. The one percentile of the bench: every figure goes through it.
 */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = ((sorted.length - 1) * Math.min(100, Math.max(0, p))) / 100;
  const below = Math.floor(rank);
  const low = sorted[below] as number;
  const high = sorted[Math.min(below + 1, sorted.length - 1)] as number;
  return low + (high - low) * (rank - below);
}

export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

/** The tail of a latency row: what `npm run bench` prints beside its median and `--json` holds in `measured`/`baseline`. */
export interface Percentiles {
  readonly p50: number;
  readonly p95: number;
  readonly p99: number;
  /** How many values they were taken from: a p99 of 7 rounds is close to their maximum. */
  readonly samples: number;
}

/** p50, p95 and p99 of `values` (non-finite ones, failed rounds, left out), rounded to 0.1; null for none. */
export function percentilesOf(values: readonly number[]): Percentiles | null {
  const finite = values.filter((value) => Number.isFinite(value));
  if (finite.length === 0) return null;
  return { p50: rounded(percentile(finite, 50)), p95: rounded(percentile(finite, 95)), p99: rounded(percentile(finite, 99)), samples: finite.length };
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
