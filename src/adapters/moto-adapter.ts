import { z } from 'zod';
import { clientConfigFor } from '../domain/client-config';
import { SandboxPlaneError } from '../domain/errors';
import { SERVICE_CATALOGS } from '../domain/service-catalog';
import { listThroughAwsApis } from './aws-resource-listers';
import type { HealthReport } from './cloud-emulator-adapter';
import { ContainerEmulatorAdapter, type ContainerAdapterOptions } from './container-emulator';
import { fetchJson } from './health-gate';
import { MOTO_GUARD_SCRIPT, MOTO_PORT, OPERATOR_HEADER, OPERATOR_TOKEN_ENV, RECORDING_PATH } from './moto-guard';
import { operatorHeaders, operatorUrl, type OperatorAccess } from './operator-endpoint';
import { captureMotoRecording, mintMotoCredentials, motoRequestsServed, quiesceMoto, resetMoto, restoreMotoRecording } from './moto-state';

const REGION = 'us-east-1';
const MIB = 1024 * 1024;

/** What placement expects a moto sandbox to use (DESIGN §12); its cap stays 512 MiB. */
export const MOTO_MEMORY_REQUEST_BYTES = 160 * MIB;

/** moto's own inventory endpoint: a JSON object keyed by service. */
const motoDataSchema = z.record(z.string(), z.unknown());

/** Healthy only on HTTP 200 with a JSON body from moto's own API. */
export async function motoHealthProbe(access: OperatorAccess, signal: AbortSignal): Promise<HealthReport> {
  const answer = await fetchJson(operatorUrl(access, '/moto-api/data.json'), signal, operatorHeaders(access));
  if (!answer.ok) return { healthy: false, registeredServices: [], readyServices: [], detail: answer.reason };
  const parsed = motoDataSchema.safeParse(answer.body);
  if (!parsed.success) {
    return { healthy: false, registeredServices: [], readyServices: [], detail: 'moto-api/data.json is not a JSON object' };
  }
  const catalog = SERVICE_CATALOGS.moto;
  const registeredServices = Object.keys(catalog).sort();
  return {
    healthy: true,
    registeredServices,
    readyServices: registeredServices.filter((service) => catalog[service]?.fidelity !== 'UNAVAILABLE'),
    detail: 'moto server answers',
  };
}

/** The user scripts/build-moto-image.sh creates for the server: the container never runs as root. */
export const MOTO_UID = 10001;

/** The label scripts/build-moto-image.sh gives the image: the resource types its moto's CloudFormation creates. */
export const CLOUDFORMATION_TYPES_LABEL = 'io.sandboxplane.cloudformation.types';

/** The types a moto container's image says its CloudFormation creates (containers carry their image's labels). */
export function motoCloudFormationTypes(labels: Readonly<Record<string, string>>): ReadonlySet<string> {
  const listed = labels[CLOUDFORMATION_TYPES_LABEL];
  if (listed === undefined || listed === '') {
    throw new SandboxPlaneError('ADAPTER_UNAVAILABLE', `this moto container's image has no ${CLOUDFORMATION_TYPES_LABEL} label, so what its CloudFormation creates is unknown`, {
      hint: 'Rebuild the image with scripts/build-moto-image.sh (its tag moved on) and point SANDBOXPLANE_MOTO_IMAGE at the id it prints.',
    });
  }
  return new Set(listed.split(','));
}

/**
 * What moto 5.2.5's CloudFormation does not apply when it updates a resource of a type
 * (IacAccess.updateGaps), each read in its source (moto/<service>/models.py,
 * `update_from_cloudformation_json`) and seen in a sandbox here. A type with no update
 * handler keeps the resource as it was, and the stack stops listing it.
 */
export const MOTO_UPDATE_GAPS: Readonly<Record<string, { readonly applies: readonly string[]; readonly gap: string }>> = {
  'AWS::DynamoDB::Table': { applies: [], gap: 'moto 5.2.5 has no update for a DynamoDB table: the table stays as it was and the stack stops listing it' },
  'AWS::KMS::Key': { applies: [], gap: 'moto 5.2.5 has no update for a KMS key: the key stays as it was and the stack stops listing it' },
  'AWS::Logs::LogGroup': { applies: [], gap: 'moto 5.2.5 has no update for a log group: the group stays as it was (its retention too) and the stack stops listing it' },
  'AWS::IAM::ManagedPolicy': { applies: [], gap: 'moto 5.2.5 has no update for a managed policy: the policy stays as it was and the stack stops listing it' },
  'AWS::S3::Bucket': {
    applies: ['BucketEncryption', 'Tags', 'BucketName'],
    gap: 'moto 5.2.5 updates a bucket only for BucketEncryption and Tags (a new BucketName replaces it): any other change, VersioningConfiguration among them, is dropped',
  },
  'AWS::SQS::Queue': {
    applies: ['VisibilityTimeout', 'ReceiveMessageWaitTimeSeconds'],
    gap: 'moto 5.2.5 updates a queue only for VisibilityTimeout and ReceiveMessageWaitTimeSeconds: a new QueueName keeps the old queue, and any other change is dropped',
  },
  'AWS::IAM::User': {
    applies: ['Path'],
    gap: 'moto 5.2.5 takes any update of a user whose template gives its UserName for a replacement, which fails on the name the user already holds (EntityAlreadyExists); else it updates only Path',
  },
  'AWS::IAM::Role': {
    applies: ['Description'],
    gap: 'moto 5.2.5 updates a role only for Description, and sets its MaxSessionDuration back to 3600: AssumeRolePolicyDocument, Path, Policies and any other change are dropped',
  },
};

/** Why moto cannot apply an update of `type` that changes `properties`, or undefined when it applies them all. */
export function motoUpdateGap(type: string, properties: readonly string[]): string | undefined {
  const known = Object.hasOwn(MOTO_UPDATE_GAPS, type) ? MOTO_UPDATE_GAPS[type] : undefined;
  if (known === undefined) return undefined;
  const dropped = properties.filter((property) => !known.applies.includes(property));
  return dropped.length === 0 ? undefined : `${known.gap} (this change sets ${dropped.join(', ')})`;
}

/** moto's server in a container of its own: the emulator we can run end to end here. */
export function createMotoAdapter(options: ContainerAdapterOptions): ContainerEmulatorAdapter {
  const catalog = SERVICE_CATALOGS.moto;
  return new ContainerEmulatorAdapter({
    ...options,
    adapter: 'moto',
    catalog,
    containerPort: MOTO_PORT,
    region: REGION,
    memoryBytes: 512 * MIB,
    // Measured (docker stats): 49 MiB idle, 85 MiB after S3/SQS/STS calls, 61–63 MiB in a burst of 50; 160 MiB leaves room for use (docs/performance.md, P6).
    memoryRequestBytes: MOTO_MEMORY_REQUEST_BYTES,
    pidsLimit: 256,
    nanoCpus: 1_000_000_000,
    // scripts/build-moto-image.sh makes user moto (10001); moto keeps its state in memory.
    user: `${MOTO_UID}:${MOTO_UID}`,
    readonlyRootfs: true,
    probe: motoHealthProbe,
    command: ['/opt/moto/bin/python', '-c', MOTO_GUARD_SCRIPT],
    operatorToken: { envName: OPERATOR_TOKEN_ENV },
    // IAM authentication from the first request; minting opens a window of its own calls only.
    // moto spools S3 objects over 5 MiB to a temporary file: /dev/shm is the one writable place of its read-only root.
    environment: () => ({ INITIAL_NO_AUTH_ACTION_COUNT: '0', MOTO_RECORDER_FILEPATH: RECORDING_PATH, TMPDIR: '/dev/shm' }),
    // The sandbox's own key may list exactly the granted services, which is all a listing asks.
    listResources: (endpoint, services, credentials) => listThroughAwsApis(clientConfigFor('moto', endpoint, REGION, credentials), catalog, services),
    reset: resetMoto,
    mintCredentials: mintMotoCredentials,
    // It resets moto before it mints (moto-state.ts), and fails on a moto that does not answer.
    mintResets: true,
    requestsServed: motoRequestsServed,
    cloudFormation: { supportedTypes: motoCloudFormationTypes, operatorHeader: OPERATOR_HEADER, updateGaps: motoUpdateGap },
    state: { capture: captureMotoRecording, restore: restoreMotoRecording, quiesce: quiesceMoto },
  });
}
