/**
 * A plan as people read it: the markdown an approver reads in the Temporal UI's current
 * details, and a one-line summary. Template text is the agent's, so every piece of it is
 * cleaned of control characters and shown inside code spans, where markdown does nothing.
 */
import { cleanDisplayText } from '../display-text';
import type { IacPlan, PlanChange } from './plan';

/** The most the details text may be; the Temporal UI shows it whole, and it is kept in history. */
export const MAX_PLAN_DETAILS_CHARS = 16_000;

/** A value longer than this is cut, ending with `…`; the JSON of the plan has it whole. */
const MAX_VALUE_CHARS = 120;
/** Context strings are the plane's, but bounded all the same. */
const MAX_CONTEXT_CHARS = 500;

/** Where and why the plan is shown, filled in by the IaC workflow. */
export interface PlanDetailsContext {
  readonly runId: string;
  readonly stack: string;
  readonly target: string;
  readonly principal: string;
  readonly state: string;
  readonly waitingFor: string;
  /** For a promotion: the sandbox run that applied the same template and parameters, shown beside the plan. */
  readonly proof?: { readonly sandboxId: string; readonly iacRunId: string; readonly at: string } | null;
  /** Where the target's own change set disagreed with the plane's diff, in words. */
  readonly crossCheck?: readonly string[];
}

/** `3 to add, 1 to change (1 replaced), 1 to remove; 1 loses data; 1 unsupported; 0 security`. */
export function planSummaryLine(plan: IacPlan): string {
  const count = (action: PlanChange['action']) => plan.changes.filter((change) => change.action === action).length;
  const replaced = plan.changes.filter((change) => change.replacement === 'True' || change.replacement === 'Conditional').length;
  const losing = plan.changes.filter((change) => change.dataLoss).length;
  return (
    `${count('Add')} to add, ${count('Modify')} to change${replaced > 0 ? ` (${replaced} replaced)` : ''}, ${count('Remove')} to remove; ` +
    `${losing > 0 ? `${losing} ${losing === 1 ? 'loses' : 'lose'} data; ` : ''}${plan.unsupported.length} unsupported; ${plan.security.length} security`
  );
}

/**
 * The plan in markdown for a reviewer: state, target and stack, what the run waits for,
 * the digest in full, security findings, unsupported resources, how to approve (while
 * AWAITING_APPROVAL) and every change with each property `before → after`. At most
 * {@link MAX_PLAN_DETAILS_CHARS}: the changes that do not fit are counted at the end.
 */
export function planDetailsMarkdown(plan: IacPlan, context: PlanDetailsContext): string {
  const runId = plain(context.runId);
  const digest = plain(plan.digest);
  const seeAll = `(\`sandboxctl iac status ${runId} --json\` shows all)`;
  const head = [
    `## IaC plan ${code(plain(context.state))}: stack ${code(plain(context.stack))} on ${code(plain(context.target))}`,
    '',
    `Run ${code(runId)} of principal ${code(plain(context.principal))}.`,
    '',
    escapeMarkdown(plain(context.waitingFor)),
    '',
    `**Plan digest** ${code(digest)}`,
    '',
    `**Summary:** ${planSummaryLine(plan)}`,
    ...(context.proof === undefined || context.proof === null
      ? []
      : [
          '',
          `**Sandbox proof:** run ${code(plain(context.proof.iacRunId))} APPLIED this template and these parameters in sandbox ${code(plain(context.proof.sandboxId))} at ${code(plain(context.proof.at))}, every supported resource verified.`,
        ]),
  ].join('\n');
  const approval = context.state === 'AWAITING_APPROVAL' ? approvalSection(runId, digest) : '';
  const sectionBudget = Math.floor((MAX_PLAN_DETAILS_CHARS - head.length - approval.length) / 6);
  const security = boundedSection(
    '### Security',
    plan.security.map((finding) => [`- ${code(plain(finding.logicalId))} (${code(plain(finding.type))}): ${escapeMarkdown(plain(finding.reason))}`]),
    sectionBudget,
    { more: (count) => `- … and ${count} more findings ${seeAll}`, empty: '- none' },
  );
  const unsupported = boundedSection(
    '### Unsupported (will NOT be created there)',
    plan.unsupported.map((resource) => [`- ${code(plain(resource.logicalId))} (${code(plain(resource.type))})`]),
    sectionBudget,
    { more: (count) => `- … and ${count} more ${seeAll}`, empty: '- none' },
  );
  const notes = context.crossCheck ?? [];
  const disagreements = boundedSection(
    "### Where the target's own change set disagrees",
    notes.map((note) => [`- ${escapeMarkdown(plain(note))}`]),
    sectionBudget,
    {
      more: (count) => `- … and ${count} more ${seeAll}`,
      empty: '',
    },
  );
  const warnings = boundedSection(
    '### Warnings',
    (plan.warnings ?? []).map((warning) => [`- ${code(plain(warning.code))} ${code(plain(warning.logicalId))}: ${escapeMarkdown(plain(warning.message))}`]),
    sectionBudget,
    { more: (count) => `- … and ${count} more ${seeAll}`, empty: '' },
  );
  const skipped = (plan.skipped ?? []).map((row) => `${code(plain(row.logicalId))} (condition ${code(plain(row.condition))} is false)`);
  const outputs = (plan.outputs ?? []).map((output) => `${output.action} ${code(plain(output.name))}: ${code(shortJson(output.before))} → ${code(shortJson(output.after))}`);
  const conditions = boundedSection(
    '### Conditions, skipped resources and outputs',
    [
      ...Object.entries(plan.conditions ?? {}).map(([name, value]) => [`- condition ${code(plain(name))}: ${value === null ? 'unknown until apply' : String(value)}`]),
      ...skipped.map((line) => [`- not created: ${line}`]),
      ...outputs.map((line) => [`- output ${line}`]),
    ],
    sectionBudget,
    { more: (count) => `- … and ${count} more ${seeAll}`, empty: '' },
  );
  const hasConditions = Object.keys(plan.conditions ?? {}).length + skipped.length + outputs.length > 0;
  const before = [head, security, (plan.warnings ?? []).length > 0 ? warnings : '', unsupported, hasConditions ? conditions : '', notes.length > 0 ? disagreements : '', approval]
    .filter((part) => part !== '')
    .join('\n\n');
  const unsupportedIds = new Set(plan.unsupported.map((resource) => resource.logicalId));
  const changes = boundedSection(
    '### Changes',
    plan.changes.map((change) => changeLines(change, unsupportedIds.has(change.logicalId))),
    MAX_PLAN_DETAILS_CHARS - before.length - 2,
    {
      more: (count) => `… and ${count} more changes ${seeAll}`,
      cut: (hidden) => `  - … and ${hidden} more properties of this change ${seeAll}`,
      empty: 'No changes: the stack already matches this template.',
    },
  );
  // The budgets above keep every plan inside; this only guards the bound itself.
  return cutText(`${before}\n\n${changes}`, MAX_PLAN_DETAILS_CHARS);
}

function approvalSection(runId: string, digest: string): string {
  // One field a line: the UI shows a code block without wrapping, and the digest is what the approver must read.
  const payload = `{\n  "approver": "<your name>",\n  "reason": "<why>",\n  "code": "<6 digits>",\n  "planDigest": "${digest}"\n}`;
  return [
    '### How to approve',
    '',
    'An approver, with the code their authenticator shows:',
    '',
    codeBlock(`sandboxctl iac approve ${runId} --approver NAME --code NNNNNN`),
    '',
    `or send the signal ${code('approve')} to workflow ${code(`iac-${runId}`)} with:`,
    '',
    codeBlock(payload),
    '',
    `To refuse: ${code(`sandboxctl iac deny ${runId} --approver NAME --code NNNNNN`)}`,
  ].join('\n');
}

/** What a change does to its resource, in the reader's terms (`requires replacement`, `destroys data`, `retained`). */
export function impactWords(change: Pick<PlanChange, 'action' | 'replacement' | 'dataLoss' | 'retained'>): string[] {
  const words: string[] = [];
  if (change.replacement === 'True') words.push('requires replacement');
  if (change.replacement === 'Conditional') words.push('may require replacement');
  if (change.dataLoss) words.push('destroys data');
  if (change.retained) words.push(change.action === 'Remove' ? 'retained: removed from the stack, kept' : 'the replaced one is retained');
  return words;
}

function changeLines(change: PlanChange, unsupported: boolean): string[] {
  const impact = impactWords(change);
  return [
    `- **${change.action}** ${code(plain(change.logicalId))} (${code(plain(change.type))})${impact.length > 0 ? ` — **${impact.join(', ')}**` : ''}${unsupported && change.action !== 'Remove' ? ' — **not created there**' : ''}`,
    ...change.properties.map(
      (property) =>
        `  - ${code(plain(property.path))}: ${code(shortJson(property.before))} → ${code(shortJson(property.after))}${property.requiresRecreation === 'Always' ? ' (forces replacement)' : property.requiresRecreation === 'Conditionally' ? ' (may force replacement)' : ''}`,
    ),
  ];
}

/**
 * The heading and as many whole items as fit in `budget` characters, then `more(n)` for
 * the rest. A first item too long on its own (a change with thousands of properties) is
 * shown line by line as far as it fits, so a reviewer always sees something of it.
 */
function boundedSection(
  heading: string,
  items: readonly (readonly string[])[],
  budget: number,
  notes: { readonly more: (count: number) => string; readonly empty: string; readonly cut?: (hidden: number) => string },
): string {
  const { more, empty, cut = (hidden: number) => `  - … and ${hidden} more lines` } = notes;
  if (items.length === 0) return `${heading}\n\n${empty}`;
  const lines: string[] = [heading, ''];
  let used = heading.length + 1;
  const fits = (line: string, reserve: number) => used + line.length + 1 + reserve <= budget;
  const add = (line: string) => {
    lines.push(line);
    used += line.length + 1;
  };
  for (const [index, item] of items.entries()) {
    const left = items.length - index - 1;
    const reserve = left > 0 ? more(left).length + 1 : 0;
    if (fits(item.join('\n'), reserve)) {
      item.forEach(add);
      continue;
    }
    if (index > 0) {
      add(more(left + 1));
      return lines.join('\n');
    }
    let shown = 0;
    while (shown < item.length && fits(item[shown] as string, cut(item.length).length + 1 + reserve)) add(item[shown++] as string);
    add(cut(item.length - shown));
    if (left > 0) add(more(left));
    return lines.join('\n');
  }
  return lines.join('\n');
}

/** `text` in at most `max` characters, ending with `…` when cut, never between the halves of a surrogate pair. */
function cutText(text: string, max: number): string {
  if (text.length <= max) return text;
  const end = /[\ud800-\udbff]/.test(text.charAt(max - 2)) ? max - 2 : max - 1;
  return `${text.slice(0, end)}…`;
}

function plain(text: string): string {
  return cutText(cleanDisplayText(text), MAX_CONTEXT_CHARS);
}

/** Compact JSON, cut to {@link MAX_VALUE_CHARS}. */
function shortJson(value: unknown): string {
  return cutText(cleanDisplayText(JSON.stringify(value) ?? 'null'), MAX_VALUE_CHARS);
}

/** An inline code span that no backtick in `text` can end early. */
function code(text: string): string {
  const longest = Math.max(0, ...Array.from(text.matchAll(/`+/g), (match) => match[0].length));
  const fence = '`'.repeat(longest + 1);
  const pad = text.startsWith('`') || text.endsWith('`') ? ' ' : '';
  return `${fence}${pad}${text}${pad}${fence}`;
}

function codeBlock(text: string): string {
  const longest = Math.max(2, ...Array.from(text.matchAll(/`+/g), (match) => match[0].length));
  const fence = '`'.repeat(longest + 1);
  return `${fence}\n${text}\n${fence}`;
}

/** Prose from the plane with markdown's active characters escaped, so it reads as written. */
function escapeMarkdown(text: string): string {
  return text.replace(/[\\`*_[\]<>#|~]/g, '\\$&');
}
