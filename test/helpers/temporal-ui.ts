/**
 * The Temporal Web UI as a reviewer uses it, driven in a real Chromium (playwright-core):
 * a page per task with the browser's own errors kept for the failure message, the
 * workflow list filtered by a query, a workflow's Current Details, and the "Send a
 * Signal" dialog. Used against the dev server's UI and the cluster's UI server alike.
 */
import assert from 'node:assert/strict';
import type { Browser, Locator, Page } from 'playwright-core';
import { screenshot } from './browser';

const UI_TIMEOUT_MS = 20_000;
/** Visibility (the list) trails the workflow by a moment; the list is searched again until then. */
const LIST_TIMEOUT_MS = 30_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Typographic quotes, as the UI's Markdown rendering prints them, back to ASCII ones. */
export function plainQuotes(text: string): string {
  return text.replace(/[“”]/g, '"').replace(/[‘’]/g, "'");
}

/**
 * Runs `steps` on a fresh page; a failing step leaves a screenshot `<name>-failed` in
 * test-results/<shots>/ and what the browser reported (page errors, console errors, 5xx).
 */
export async function inUiPage(browser: Browser, shots: string, name: string, steps: (page: Page) => Promise<void>): Promise<void> {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  page.on('response', (response) => {
    if (response.status() >= 500) problems.push(`HTTP ${response.status()} ${response.url()}`);
  });
  page.setDefaultTimeout(UI_TIMEOUT_MS);
  page.setDefaultNavigationTimeout(UI_TIMEOUT_MS);
  try {
    await steps(page);
  } catch (err) {
    await screenshot(page, shots, `${name}-failed`).catch(() => undefined);
    if (problems.length > 0) process.stderr.write(`${shots} ${name}: what the browser reported:\n${problems.slice(-20).join('\n')}\n`);
    throw err;
  } finally {
    await context.close();
  }
}

/** Chromium's word for a request it dropped because the machine's network changed under it. */
const NETWORK_CHANGED = /ERR_NETWORK_CHANGED/;

/**
 * Loads a page of the UI and waits for `ready` on it. Once, in early runs, the UI showed
 * its own "500 Internal Error" page when loading the list right after a running
 * workflow's page (cause not pinned down; it did not come back in later runs); loading
 * again is what that page suggests, and each time is reported and kept as a screenshot.
 *
 * Chromium also drops every request in flight when an interface comes or goes on the
 * machine (ERR_NETWORK_CHANGED), and a bridge does each time a docker worker makes a
 * sandbox's network or its network pool refills: the UI's code then never loads. A
 * person would load the page again, and so does this, saying so.
 */
async function gotoUi(page: Page, shots: string, url: string, ready: Locator, attempts = 3): Promise<void> {
  const errorPage = page.getByText("Uh oh. There's an error.");
  let networkChanged = false;
  const onFailed = (request: { failure(): { errorText: string } | null }) => {
    if (NETWORK_CHANGED.test(request.failure()?.errorText ?? '')) networkChanged = true;
  };
  page.on('requestfailed', onFailed);
  try {
    for (let attempt = 1; ; attempt++) {
      networkChanged = false;
      const loaded = await page
        .goto(url)
        .then(() => ready.or(errorPage).first().waitFor())
        .then(
          () => true,
          (err: unknown) => {
            if (!(networkChanged || NETWORK_CHANGED.test(String(err))) || attempt >= attempts) throw err;
            return false;
          },
        );
      if (!loaded) {
        process.stderr.write(`${shots}: the machine's network changed while ${url} loaded (ERR_NETWORK_CHANGED); loading it again\n`);
        continue;
      }
      if (!(await errorPage.isVisible())) return;
      const shot = await screenshot(page, shots, `ui-error-page-${Date.now()}`);
      if (attempt >= attempts) assert.fail(`the Web UI showed its error page for ${url} ${attempts} times (last: ${shot})`);
      process.stderr.write(`${shots}: the Web UI showed its error page for ${url} (${shot}); loading it again\n`);
    }
  } finally {
    page.off('requestfailed', onFailed);
  }
}

/**
 * The workflow list with `query` typed into the UI's own query box, re-run (its Search
 * button) until every one of `present` shows up and every one of `absent` is gone.
 */
export async function filterList(page: Page, options: { shots: string; uiUrl: string; query: string; present: readonly string[]; absent: readonly string[] }): Promise<void> {
  const { shots, uiUrl, query, present, absent } = options;
  await gotoUi(page, shots, `${uiUrl}/namespaces/default/workflows`, page.getByRole('button', { name: 'Add Filter' }));
  const queryBox = page.getByPlaceholder('Enter a query');
  // The filter bar starts in its "Add Filter" mode; the </> button switches it to a raw query.
  if (!(await queryBox.isVisible())) await page.getByTestId('toggle-manual-query').click();
  await queryBox.fill(query);
  const search = page.getByRole('button', { name: 'Search', exact: true });
  await search.click();
  await page.waitForURL((url) => url.searchParams.get('query') === query);

  const row = (workflowId: string) => page.getByRole('link', { name: workflowId, exact: true });
  const deadline = Date.now() + LIST_TIMEOUT_MS;
  for (;;) {
    await page
      .getByText(/Workflows/)
      .first()
      .waitFor();
    await sleep(500);
    const shown = await Promise.all(present.map(async (id) => (await row(id).count()) > 0));
    const hidden = await Promise.all(absent.map(async (id) => (await row(id).count()) === 0));
    if (shown.every(Boolean) && hidden.every(Boolean)) return;
    if (Date.now() > deadline) {
      assert.fail(`the list filtered by ${query} should show ${present.join(', ') || 'nothing in particular'} and not ${absent.join(', ')}`);
    }
    await search.click();
  }
}

/** The rendered Current Details of the workflow page's User Metadata tab (to scroll to a part of them, say). */
export function currentDetails(page: Page): Locator {
  // The UI renders the details (Markdown) into an iframe of its own; the summary has one too.
  const panel = page.getByRole('heading', { name: 'Current Details' }).locator('xpath=ancestor::div[.//iframe[@title="output"]][1]');
  return panel.locator('iframe[title="output"]').contentFrame().locator('body');
}

/**
 * Opens a workflow from the (filtered) list and returns the text of its Current Details,
 * once they show `ready` (by default the sandbox lifecycle's "Waiting for a human").
 */
export async function openAndReadDetails(page: Page, workflowId: string, ready: RegExp = /Waiting for a human/): Promise<string> {
  await page.getByRole('link', { name: workflowId, exact: true }).click();
  await page.waitForURL((url) => url.pathname.includes(`/workflows/${workflowId}/`));
  await page.getByRole('heading', { name: workflowId }).waitFor();
  await page.getByRole('tab', { name: 'User Metadata' }).click();
  const details = currentDetails(page);
  await details.getByText(ready).waitFor();
  return (await details.innerText()).trim();
}

/** More Actions → Send a Signal, picks the signal by name, types its JSON input, submits. */
export async function sendSignal(page: Page, options: { shots: string; shot: string; name: string; payload: unknown }): Promise<void> {
  const { shots, shot, name, payload } = options;
  await page.getByRole('button', { name: 'More Actions' }).click();
  await page.getByRole('menuitem', { name: 'Send a Signal' }).click();
  const dialog = page.getByRole('dialog', { name: 'Send a Signal' });
  await dialog.waitFor();
  // The names come from the workflow's own metadata (its defined signals).
  await dialog.getByTestId('signal-select-button').click();
  await dialog.getByRole('option', { name, exact: true }).click();
  // "Data" is a CodeMirror JSON editor: a contenteditable textbox.
  const input = dialog.locator('[role="textbox"][contenteditable="true"]');
  await input.click();
  await page.keyboard.insertText(JSON.stringify(payload));
  assert.deepEqual(JSON.parse(await input.innerText()), payload, 'the dialog holds the payload typed into it');
  await screenshot(page, shots, shot);
  // Leave the editor first: the UI reformats the JSON when it loses focus, and a click on
  // Submit that also blurs the editor can be spent on that.
  await input.blur();
  await dialog.getByRole('button', { name: 'Submit' }).click();
  await page.getByText('Workflow signaled.').waitFor();
  await dialog.waitFor({ state: 'hidden' });
}
