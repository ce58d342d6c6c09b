import { cleanDisplayText } from '../../domain/display-text';

/**
 * Left-aligned columns two spaces apart; the last column is not padded. Cells are
 * cleaned of control characters here too (DESIGN §12): text an older worker stored
 * before the schemas cleaned it must not move the reader's cursor either.
 */
export function formatTable(headers: readonly string[], cellRows: readonly (readonly string[])[]): string {
  const rows = cellRows.map((row) => row.map(cleanDisplayText));
  const widths = headers.map((header, column) => Math.max(header.length, ...rows.map((row) => (row[column] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n');
}

/** Label/value lines with the values aligned: `  endpoint   memory://x`; values cleaned as in {@link formatTable}. */
export function formatFields(fields: readonly (readonly [string, string])[]): string {
  const width = Math.max(...fields.map(([label]) => label.length));
  return fields.map(([label, value]) => `  ${label.padEnd(width)}  ${cleanDisplayText(value)}`).join('\n');
}

/** 1790 → `29m 50s`, 3900 → `1h 5m`, 45 → `45s`. */
export function formatTimeLeft(seconds: number): string {
  const hours = Math.floor(seconds / 3600);
  const minutes = Math.floor((seconds % 3600) / 60);
  const rest = seconds % 60;
  if (hours > 0) return minutes > 0 ? `${hours}h ${minutes}m` : `${hours}h`;
  if (minutes > 0) return rest > 0 ? `${minutes}m ${rest}s` : `${minutes}m`;
  return `${rest}s`;
}
