import type { Command } from 'commander';
import { loadConfig } from '../../config/config';
import { approverNameSchema } from '../../domain/store-commands';
import { parseCliArgument } from '../cli-options';
import { action, jsonOption } from '../command-action';
import { formatApproverList } from '../format/policy-format';
import { printResult } from '../output';
import { withStoreClient } from '../temporal-clients';
import { registerStoreList } from './store-list-command';

/** What a person sees after `approvers add`: the URI, its QR code, and how to approve with the code. */
async function formatEnrolment(approver: { name: string; otpauthUri: string }): Promise<string> {
  const { generate } = await import('qrcode-terminal');
  const qr = await new Promise<string>((resolve) => generate(approver.otpauthUri, { small: true }, resolve));
  return [
    `Approver ${approver.name} is enrolled. Scan this into their authenticator app now: it is shown once, and never stored in clear.`,
    '',
    qr,
    approver.otpauthUri,
    '',
    `Approve with the code the app shows: sandboxctl approve ID --approver ${approver.name} --code NNNNNN`,
    `(in the Temporal UI: signal "approve" with {"approver": "${approver.name}", "reason": "...", "code": "NNNNNN"})`,
  ].join('\n');
}

/** approvers add, list, remove: who may approve or deny requests. */
export function registerApproverCommands(program: Command): void {
  const approvers = program.command('approvers').description('the people who may approve or deny sandboxes and IaC runs AWAITING_APPROVAL (never their own requests)');

  approvers
    .command('add')
    .description('enrol an approver with an authenticator app (TOTP): prints their otpauth:// URI and its QR code, once')
    .argument('<name>', 'the name they will pass as --approver (or as "approver" in the UI signal)')
    .addOption(jsonOption())
    .action(
      action(async (raw, args) => {
        const name = parseCliArgument(approverNameSchema, args[0], 'NAME');
        const approver = await withStoreClient(loadConfig(), (store) => store.addApprover(name));
        const json = raw.json === true;
        printResult({ json }, { name: approver.name, addedAt: approver.addedAt, otpauthUri: approver.otpauthUri }, json ? '' : await formatEnrolment(approver));
      }),
    );

  registerStoreList(approvers, 'every listed approver, by name', 'approvers', (store) => store.listApprovers(), formatApproverList);

  approvers
    .command('remove')
    .description('remove an approver; their later approvals and denials are ignored')
    .argument('<name>', 'a listed approver')
    .addOption(jsonOption())
    .action(
      action(async (raw, args) => {
        const name = parseCliArgument(approverNameSchema, args[0], 'NAME');
        const removed = await withStoreClient(loadConfig(), (store) => store.removeApprover(name));
        printResult({ json: raw.json === true }, removed, `Approver ${removed.name} is no longer listed.`);
      }),
    );
}
