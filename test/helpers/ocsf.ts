import assert from 'node:assert/strict';

/**
 * The attributes OCSF requires of an API Activity event (class 6003), from the schema
 * itself (github.com/ocsf/ocsf-schema, 1.3.0): the base event's `activity_id`,
 * `category_uid`, `class_uid`, `metadata`, `severity_id`, `time` and `type_uid`; API
 * Activity's `actor`, `api` and `src_endpoint`; `metadata.product` and `metadata.version`;
 * the product's `name` and `vendor_name`; `api.operation`; and the "at least one of"
 * constraints of the actor and network endpoint objects.
 */
const REQUIRED = ['activity_id', 'category_uid', 'class_uid', 'metadata', 'severity_id', 'time', 'type_uid', 'actor', 'api', 'src_endpoint'] as const;
const ACTOR_AT_LEAST_ONE = ['process', 'user', 'invoked_by', 'session', 'app_name', 'app_uid'];
const ENDPOINT_AT_LEAST_ONE = ['ip', 'uid', 'name', 'hostname', 'svc_name', 'instance_uid', 'interface_uid', 'interface_name'];

type Json = Record<string, unknown>;

/** Fails unless `event` is an OCSF API Activity event with every required attribute. */
export function assertOcsfApiActivity(event: Json): void {
  for (const name of REQUIRED) assert.ok(event[name] !== undefined && event[name] !== null, `${name} is required`);
  assert.equal(event.class_uid, 6003);
  assert.equal(event.category_uid, 6);
  assert.ok([0, 1, 2, 3, 4, 99].includes(event.activity_id as number), `activity_id ${String(event.activity_id)}`);
  assert.equal(event.type_uid, 600300 + (event.activity_id as number));
  assert.ok(Number.isInteger(event.time) && (event.time as number) > 1e12, 'time is epoch milliseconds');
  assert.ok([0, 1, 2, 3, 4, 5, 6, 99].includes(event.severity_id as number));
  const metadata = event.metadata as Json;
  assert.match(String(metadata.version), /^\d+\.\d+\.\d+$/);
  const product = metadata.product as Json;
  assert.ok(typeof product.name === 'string' && typeof product.vendor_name === 'string', 'metadata.product names the product and its vendor');
  assert.ok(
    ACTOR_AT_LEAST_ONE.some((key) => (event.actor as Json)[key] !== undefined),
    'actor has at least one of its constraint attributes',
  );
  assert.ok(typeof ((event.actor as Json).user as Json | undefined)?.name === 'string', 'actor.user.name');
  assert.ok(typeof (event.api as Json).operation === 'string', 'api.operation is required');
  assert.ok(
    ENDPOINT_AT_LEAST_ONE.some((key) => (event.src_endpoint as Json)[key] !== undefined),
    'src_endpoint has at least one of its constraint attributes',
  );
  if (event.status_id !== undefined) assert.ok([0, 1, 2, 99].includes(event.status_id as number));
}
