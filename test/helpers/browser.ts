import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { REPO_ROOT } from '../harness/cli';

/**
 * The system's Chromium (Debian's `chromium` package, installed by
 * scripts/install-chromium.sh); playwright-core never downloads a browser.
 */
export const CHROMIUM_ENV = 'SANDBOXPLANE_CHROMIUM';
const DEFAULT_CHROMIUM = '/usr/bin/chromium';

/**
 * Headless, as root in a container, and without the background chatter (component
 * updates, sync, QUIC, ...) whose refused connections would otherwise flood the
 * browser. Playwright adds a fresh, empty profile directory (--user-data-dir) of its
 * own to every launch and removes it on close.
 */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
] as const;

/** Where the browser tests keep their screenshots (git-ignored). */
export const SCREENSHOT_ROOT = path.join(REPO_ROOT, 'test-results');

export function chromiumPath(): string {
  const configured = process.env[CHROMIUM_ENV];
  const executable = configured !== undefined && configured !== '' ? configured : DEFAULT_CHROMIUM;
  try {
    fs.accessSync(executable, fs.constants.X_OK);
  } catch {
    throw new Error(`no Chromium at ${executable}: run \`bash scripts/install-chromium.sh\` (as root on Debian), or set ${CHROMIUM_ENV}`);
  }
  return executable;
}

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath(), headless: true, args: [...CHROMIUM_ARGS], timeout: 60_000 });
}

/** Saves a full-page screenshot as test-results/<dir>/<name>.png and returns its path. */
export async function screenshot(page: Page, dir: string, name: string): Promise<string> {
  const file = path.join(SCREENSHOT_ROOT, dir, `${name}.png`);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  await page.screenshot({ path: file, fullPage: true });
  return file;
}
