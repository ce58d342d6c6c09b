import type { BenchOptions, FigureId } from './bench-options';
import { median, percentilesOf, type Percentiles } from './measure';

export type Unit = 'ms' | 'per_s' | 'MB' | 'count';

/** One number of a row: what was measured, or its baseline. `null`: not measured. */
export interface Measure {
  readonly label: string;
  readonly value: number | null;
  readonly unit: Unit;
  /** A latency's tail, of the samples whose median is `value`; absent for rates, memory and single timings. */
  readonly percentiles?: Percentiles | null;
}

/** A latency side of a row: the median of `samples` (ms) as its value, with their p50, p95 and p99. */
export function latency(label: string, samples: readonly number[]): Measure {
  const finite = samples.filter((sample) => Number.isFinite(sample));
  return { label, value: finite.length === 0 ? null : median(finite), unit: 'ms', percentiles: percentilesOf(finite) };
}

/** A goal from issue 15; reported, never asserted. `reached: null` when nothing was measured. */
export interface Target {
  readonly text: string;
  readonly reached: boolean | null;
}

/** One line of the table: a figure against the baseline measured beside it in this run. */
export interface FigureRow {
  /** Stable key for `--json` readers: `P2.cold`, `P3.200`, … */
  readonly key: string;
  readonly measured: Measure;
  readonly baseline: Measure;
  /** measured ÷ baseline; `null` when either is missing. */
  readonly ratio: number | null;
  readonly target: Target | null;
  /** How it was measured (rounds, medians, failures), one line. */
  readonly detail: string;
  /** More numbers for `--json` (per-container times, memory deltas, …). */
  readonly data?: Readonly<Record<string, unknown>>;
}

export type FigureStatus = 'measured' | 'skipped' | 'failed';

/** What one figure produced. */
export interface FigureResult {
  readonly id: FigureId;
  readonly title: string;
  readonly status: FigureStatus;
  /** Why it was skipped or failed, naming the missing component or the error. */
  readonly reason: string | null;
  readonly rows: readonly FigureRow[];
  /** Where the time or memory goes: CPU per process, Temporal history events, engine calls. */
  readonly profile: Readonly<Record<string, unknown>> | null;
  /** Lifecycles (create → READY → destroy) that threw or did not end as asked. */
  readonly lifecycleFailures: number;
  /** One line per distinct failure. */
  readonly failures: readonly string[];
}

/** `npm run bench -- --json`: the whole run as one document. */
export interface BenchReport {
  readonly startedAt: string;
  readonly seconds: number;
  readonly machine: Readonly<Record<string, unknown>>;
  readonly options: BenchOptions;
  readonly figures: Partial<Record<FigureId, FigureResult>>;
  readonly lifecycleFailures: number;
}

/** measured ÷ baseline, or null when either side is missing or the baseline is zero. */
export function ratioOf(measured: number | null, baseline: number | null): number | null {
  if (measured === null || baseline === null || baseline === 0) return null;
  return measured / baseline;
}

export function formatValue(value: number | null, unit: Unit): string {
  if (value === null) return 'not measured';
  switch (unit) {
    case 'ms':
      return value >= 100 ? `${Math.round(value)} ms` : `${value.toFixed(1)} ms`;
    case 'per_s':
      return `${value.toFixed(1)}/s`;
    case 'MB':
      return `${value.toFixed(0)} MB`;
    case 'count':
      return value >= 100 ? `${Math.round(value)}` : `${value.toFixed(2)}`;
  }
}

function tailText(side: string, measure: Measure): string | null {
  const tail = measure.percentiles;
  if (tail === undefined || tail === null) return null;
  const values = [tail.p50, tail.p95, tail.p99].map((value) => formatValue(value, measure.unit).replace(/ ms$/, ''));
  return `${side} ${values.join(' / ')} ms (${tail.samples})`;
}

/** `p50 / p95 / p99: measured 41.0 / 52.3 / 60.1 ms (20), baseline …`, or '' for a row with no latency samples. */
export function percentilesLine(row: FigureRow): string {
  const sides = [tailText('measured', row.measured), tailText('baseline', row.baseline)].filter((text) => text !== null);
  return sides.length === 0 ? '' : `p50 / p95 / p99: ${sides.join(', ')}`;
}

function reachedText(target: Target | null): string {
  if (target === null) return '';
  if (target.reached === null) return '-';
  return target.reached ? 'yes' : 'NO';
}

/** The table `npm run bench` prints: one line per row with its detail below it; a skipped or failed figure says why. */
export function renderTable(report: BenchReport): string {
  const header = ['row', 'measured', '', 'baseline (same run)', '', 'ratio', 'target', 'reached'];
  // A row of cells, or a note printed as it is (a skipped or failed figure).
  const lines: ({ cells: string[]; detail: string; tail: string } | { note: string })[] = [{ cells: header, detail: '', tail: '' }];
  for (const figure of Object.values(report.figures)) {
    if (figure === undefined) continue;
    for (const row of figure.rows) {
      lines.push({
        cells: [
          row.key,
          row.measured.label,
          formatValue(row.measured.value, row.measured.unit),
          row.baseline.label,
          formatValue(row.baseline.value, row.baseline.unit),
          row.ratio === null ? '-' : `${row.ratio.toFixed(2)}x`,
          row.target?.text ?? '',
          reachedText(row.target),
        ],
        detail: row.detail,
        tail: percentilesLine(row),
      });
    }
    if (figure.status !== 'measured') lines.push({ note: `${figure.id}  ${figure.title}: ${figure.status.toUpperCase()}, ${figure.reason ?? ''}` });
  }
  const widths = header.map((_, column) => Math.max(...lines.map((line) => ('cells' in line ? (line.cells[column] ?? '').length : 0))));
  const rightAligned = new Set([2, 4, 5]);
  const out = lines.flatMap((line) => {
    if (!('cells' in line)) return [line.note];
    const cells = line.cells.map((cell, column) => (rightAligned.has(column) ? cell.padStart(widths[column] ?? 0) : cell.padEnd(widths[column] ?? 0)));
    const indent = ' '.repeat((widths[0] ?? 0) + 2);
    return [cells.join('  ').trimEnd(), ...[line.tail, line.detail].filter((text) => text !== '').map((text) => `${indent}${text}`)];
  });
  return `${out.join('\n')}\n`;
}
