/**
 * The audit trail as OCSF (Open Cybersecurity Schema Framework) events for a SIEM
 * (DESIGN §19): each row is one API Activity event (class 6003, category 6 Application
 * Activity) of schema version {@link OCSF_SCHEMA_VERSION}. The one home of the mapping.
 */
import type { AuditRecord } from './audit-evidence';

/** The OCSF schema version the records follow (`metadata.version`). */
export const OCSF_SCHEMA_VERSION = '1.3.0';
export const OCSF_API_ACTIVITY_CLASS_UID = 6003;
export const OCSF_APPLICATION_CATEGORY_UID = 6;

/** API Activity's activity ids (CRUD, and Other). */
const ACTIVITIES = { 1: 'Create', 2: 'Read', 3: 'Update', 4: 'Delete', 99: 'Other' } as const;
type ActivityId = keyof typeof ACTIVITIES;

/** Actions that change what exists (create or delete it); the audit's other known actions update a sandbox, a run or a target. */
const CREATE = /^(requested|placed|ready)$|_(taken|created|added|planned)$/;
const DELETE = /destroy|delet|remov/;
const UPDATE =
  /^(screened|approved|denied|withdrawn|approval_expired|placement_refused|provision_failed|extended|expiring|paused|resuming|resumed|restored|emulator_restarted|reconciled)$|^iac_/;

function activityOf(action: string): ActivityId {
  if (DELETE.test(action)) return 4;
  if (CREATE.test(action)) return 1;
  if (UPDATE.test(action)) return 3;
  return 99;
}

/** A refusal or a failure, by the row's effect or action; anything else went through. */
function failed(record: AuditRecord): boolean {
  return /^(deny|denied|failed|refused|error)$/.test(record.effect) || /(_failed|_refused|denied|_expired)$/.test(record.action);
}

/** What the mapping needs of the plane itself. */
export interface OcsfProduct {
  /** The plane's own version (package.json), `metadata.product.version`. */
  readonly version: string;
}

/**
 * One audit row as an OCSF API Activity event: the required attributes of class 6003
 * (`activity_id`, `category_uid`, `class_uid`, `type_uid`, `time`, `severity_id`,
 * `metadata` with `product` and `version`, `actor`, `api.operation`, `src_endpoint`), the
 * recommended ones the row has (`status_id`, `resources`, `message`), and the rest of the
 * row (its chain fields among them) under `unmapped`.
 */
export function toOcsfApiActivity(record: AuditRecord, product: OcsfProduct): Record<string, unknown> {
  const activityId = activityOf(record.action);
  const bad = failed(record);
  const subject = record.sandboxId ?? record.target ?? '';
  const resourceType = record.sandboxId !== null ? 'sandbox' : 'target';
  return {
    class_uid: OCSF_API_ACTIVITY_CLASS_UID,
    class_name: 'API Activity',
    category_uid: OCSF_APPLICATION_CATEGORY_UID,
    category_name: 'Application Activity',
    activity_id: activityId,
    activity_name: ACTIVITIES[activityId],
    type_uid: OCSF_API_ACTIVITY_CLASS_UID * 100 + activityId,
    type_name: `API Activity: ${ACTIVITIES[activityId]}`,
    time: Date.parse(record.at),
    severity_id: bad ? 3 : 1,
    severity: bad ? 'Medium' : 'Informational',
    status_id: bad ? 2 : 1,
    status: bad ? 'Failure' : 'Success',
    ...(record.reason !== null ? { status_detail: record.reason } : {}),
    message: `${record.actor}: ${record.action} ${resourceType} ${subject} (${record.effect})${record.reason !== null ? `: ${record.reason}` : ''}`,
    metadata: {
      version: OCSF_SCHEMA_VERSION,
      uid: `sandboxplane:${record.stream}:${record.seq}`,
      correlation_uid: record.workflowId,
      sequence: record.seq,
      log_name: record.stream,
      original_time: record.at,
      product: { name: 'Cloud Sandbox Plane', vendor_name: 'cloud-sandbox-plane', version: product.version },
    },
    actor: { user: { name: record.actor } },
    api: { operation: record.action, service: { name: 'cloud-sandbox-plane' } },
    src_endpoint: { svc_name: 'cloud-sandbox-plane', name: record.workflowId },
    resources: [{ uid: subject, type: resourceType }],
    unmapped: {
      stream: record.stream,
      seq: record.seq,
      workflow_id: record.workflowId,
      run_id: record.runId,
      step: record.step,
      effect: record.effect,
      reason: record.reason,
      summary: record.summary,
      prev_hash: record.prevHash,
      hash: record.hash,
    },
  };
}
