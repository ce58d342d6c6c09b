import fs from 'node:fs';
import path from 'node:path';

/** Files under test/unit/ need neither Docker nor Temporal. */
export const UNIT_DIR = 'unit';
/** Files under test/cluster/ bring their own Temporal cluster and engines (scripts/cluster.sh): only `npm run test:cluster` runs them. */
export const CLUSTER_DIR = 'cluster';

/** A selected test file: its absolute path, and its path under test/ (what filters match). */
export interface TestFile {
  readonly file: string;
  readonly relative: string;
}

export function isUnit(testFile: TestFile): boolean {
  return testFile.relative.split(path.sep)[0] === UNIT_DIR;
}

export function isCluster(testFile: TestFile): boolean {
  return testFile.relative.split(path.sep)[0] === CLUSTER_DIR;
}

/**
 * The `*.test.ts` files under `testDir`, sorted; with `unitOnly` only those under unit/;
 * those under cluster/ only with `cluster`, and then nothing else.
 * A filter matches a substring of the path under `testDir`, never of the folders above
 * it, so a checkout in `…/floci-work/` does not make `floci` select every file.
 */
export function selectTestFiles(testDir: string, options: { unitOnly: boolean; cluster?: boolean; filters: readonly string[] }): TestFile[] {
  return (fs.readdirSync(testDir, { recursive: true }) as string[])
    .filter((relative) => relative.endsWith('.test.ts'))
    .sort()
    .map((relative) => ({ file: path.join(testDir, relative), relative }))
    .filter((testFile) => !options.unitOnly || isUnit(testFile))
    .filter((testFile) => isCluster(testFile) === (options.cluster ?? false))
    .filter(({ relative }) => options.filters.length === 0 || options.filters.some((filter) => relative.includes(filter)));
}
