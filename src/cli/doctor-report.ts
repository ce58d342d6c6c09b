import type { CheckResult } from './doctor-checks';

const MARK: Readonly<Record<CheckResult['status'], string>> = { ok: 'ok  ', fail: 'FAIL', warn: 'warn' };

/** The human form of the doctor's report: one line a check, a fix line under each failure. */
export function formatDoctorReport(checks: readonly CheckResult[], ok: boolean): string {
  const width = Math.max(...checks.map((c) => c.name.length + (c.required ? 0 : ' (optional)'.length)));
  const lines = checks.flatMap((c) => {
    const name = `${c.name}${c.required ? '' : ' (optional)'}`.padEnd(width);
    const line = `${MARK[c.status]}  ${name}  ${c.detail}`;
    return c.hint !== undefined && c.status !== 'ok' ? [line, `      ${' '.repeat(width)}  fix: ${c.hint}`] : [line];
  });
  lines.push('', ok ? 'All required checks pass.' : 'Some required checks fail; see the fix lines above.');
  return lines.join('\n');
}
