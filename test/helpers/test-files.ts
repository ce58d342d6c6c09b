import fs from 'node:fs';
import path from 'node:path';

/** Files under test/unit/ need neither Docker nor Temporal. */
export const UNIT_DIR = 'unit';

/** A selected test file: its absolute path, and its path under test/ (what filters match). */
export interface TestFile {
  readonly file: string;
  readonly relative: string;
}

export function isUnit(testFile: TestFile): boolean {
  return testFile.relative.split(path.sep)[0] === UNIT_DIR;
}

/**
 * The `*.test.ts` files under `testDir`, sorted; with `unitOnly` only those under unit/.
 * A filter matches a substring of the path under `testDir`, never of the folders above
 * it, so a checkout in `…/floci-work/` does not make `floci` select every file.
 */
export function selectTestFiles(testDir: string, options: { unitOnly: boolean; filters: readonly string[] }): TestFile[] {
  return (fs.readdirSync(testDir, { recursive: true }) as string[])
    .filter((relative) => relative.endsWith('.test.ts'))
    .sort()
    .map((relative) => ({ file: path.join(testDir, relative), relative }))
    .filter((testFile) => !options.unitOnly || isUnit(testFile))
    .filter(({ relative }) => options.filters.length === 0 || options.filters.some((filter) => relative.includes(filter)));
}
