/**
 * Webhooks (DESIGN §19): operators' endpoints that receive events as Standard Webhooks
 * deliveries. What an endpoint may be, what a registration and a delivery look like.
 */
import { z } from 'zod';
import { eventFilterSchema } from './events';
import { principalSchema } from './sandbox-request';

export const webhookIdSchema = z.string().regex(/^wh_[0-9a-f]{16}$/, 'must be a webhook id such as wh_0123456789abcdef (`sandboxctl webhooks list` shows them)');

const LOOPBACK_HOSTS = new Set(['localhost', '[::1]']);

function isLoopback(hostname: string): boolean {
  return LOOPBACK_HOSTS.has(hostname) || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

/**
 * An endpoint is the operator's: `https://` anywhere, plain `http://` only to loopback (a
 * local receiver, a test), never credentials in the URL (they would be shown by `list`).
 */
export const webhookUrlSchema = z
  .string()
  .max(2000)
  .url('must be a URL such as https://hooks.example.com/sandboxplane')
  .superRefine((text, ctx) => {
    // `.url()` has said what is wrong with text that is no URL: zod runs refinements all the same.
    if (!URL.canParse(text)) return;
    const url = new URL(text);
    if (url.username !== '' || url.password !== '') ctx.addIssue({ code: z.ZodIssueCode.custom, message: 'must not carry credentials: the signature authenticates the plane' });
    if (url.protocol === 'https:') return;
    if (url.protocol === 'http:' && isLoopback(url.hostname)) return;
    ctx.addIssue({ code: z.ZodIssueCode.custom, message: 'must be https:// (plain http:// only to loopback: 127.0.0.1, [::1], localhost)' });
  });

export const newWebhookSchema = z
  .object({
    url: webhookUrlSchema,
    /** Kinds or families to send (none: every event). */
    kinds: z.array(eventFilterSchema).max(40).default([]),
    /** Only this principal's events (none: everyone's). */
    principal: principalSchema.optional(),
  })
  .strict();
export type NewWebhookInput = z.input<typeof newWebhookSchema>;

/** A registered endpoint as `webhooks list` shows it; never its secret. */
export interface WebhookRecord {
  readonly webhookId: string;
  readonly url: string;
  readonly events: readonly string[];
  readonly principal: string | null;
  readonly createdAt: string;
  /** The newest event it has been given (delivered, or given up on). */
  readonly deliveredThrough: number;
}

export const WEBHOOK_OUTCOMES = ['delivered', 'failed', 'gave_up'] as const;
export type WebhookOutcome = (typeof WEBHOOK_OUTCOMES)[number];

/** One attempt to deliver one event, as `webhooks deliveries` shows it. */
export interface WebhookDelivery {
  readonly eventId: string;
  readonly attempt: number;
  readonly outcome: WebhookOutcome;
  /** The receiver's HTTP status; `null` when none came (refused, timed out). */
  readonly status: number | null;
  readonly error: string | null;
  readonly durationMs: number;
  readonly at: string;
}

/** The workflow that delivers one endpoint's events, one per endpoint. */
export function webhookWorkflowId(webhookId: string): string {
  return `webhook-${webhookId}`;
}
