/** Left-aligned columns two spaces apart; the last column is not padded. */
export function formatTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((header, column) => Math.max(header.length, ...rows.map((row) => (row[column] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n');
}

/** Label/value lines with the values aligned: `  endpoint   memory://x`. */
export function formatFields(fields: readonly (readonly [string, string])[]): string {
  const width = Math.max(...fields.map(([label]) => label.length));
  return fields.map(([label, value]) => `  ${label.padEnd(width)}  ${value}`).join('\n');
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
