/**
 * The hand-written protobuf of the lean `status` query and of the payload codec, against
 * `@temporalio/proto`'s own encoder and decoder: the same bytes out, the same messages in.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Payload as SdkPayload } from '@temporalio/common';
import { google, temporal } from '@temporalio/proto';
import { decodeQueryWorkflowResponse, decodeRpcStatus, encodeQueryWorkflowRequest, QUERY_REJECT_CONDITION_NONE } from '../../src/client/query-workflow-wire';
import { AesGcmPayloadCodec } from '../../src/codec/aes-gcm-codec';
import { generateCodecKey } from '../../src/codec/codec-keys';
import { readPayload, writePayload } from '../../src/codec/payload-wire';
import { protobufFields, ProtobufWireError, ProtobufWriter } from '../../src/codec/protobuf-wire';
import { rejectsWith } from '../helpers/rejects-with';

const { Payload, Payloads } = temporal.api.common.v1;
const { QueryWorkflowRequest, QueryWorkflowResponse } = temporal.api.workflowservice.v1;

const text = (value: string) => new TextEncoder().encode(value);

const PAYLOADS: SdkPayload[] = [
  { metadata: { encoding: text('json/plain') }, data: text(JSON.stringify({ id: 'sbx-1', state: 'READY', note: 'é ✓ 🚀' })) },
  { metadata: { encoding: text('binary/null') } },
  { metadata: { encoding: text('binary/encrypted'), 'encryption-key-id': text('k1'), empty: new Uint8Array() }, data: new Uint8Array(300).map((_, i) => i % 256) },
  { metadata: {}, data: new Uint8Array() },
  { data: new Uint8Array([0, 1, 2]) },
];

function written(payload: SdkPayload): Buffer {
  const writer = new ProtobufWriter();
  writePayload(writer, payload);
  return writer.finish();
}

/** A decoded protobufjs Payload as plain data, to compare with ours. */
function plain(payload: { metadata?: Record<string, Uint8Array> | null; data?: Uint8Array | null }) {
  return {
    metadata: Object.fromEntries(Object.entries(payload.metadata ?? {}).map(([key, value]) => [key, Buffer.from(value).toString('hex')])),
    data: Buffer.from(payload.data ?? new Uint8Array()).toString('hex'),
  };
}

/** Our bytes for `payload` are Payload.encode's, and read back as Payload.decode reads them; what readPayload read. */
function sameAsProtobufjs(payload: SdkPayload): ReturnType<typeof readPayload> {
  const ours = written(payload);
  assert.deepEqual(ours, Buffer.from(Payload.encode(payload).finish()), JSON.stringify(plain(payload)));
  const read = readPayload(ours);
  assert.deepEqual(plain(read.payload), plain(Payload.decode(ours)));
  return read;
}

describe('protobuf by hand, as @temporalio/proto writes and reads it', () => {
  test('a Payload is written byte for byte as Payload.encode writes it, and reads back as Payload.decode reads it', () => {
    for (const payload of PAYLOADS) assert.equal(sameAsProtobufjs(payload).external, false);
    const external = Payload.encode({ metadata: {}, data: text('x'), externalPayloads: [{}] }).finish();
    assert.equal(readPayload(external).external, true, 'a payload kept in external storage is noticed');
  });

  test('QueryWorkflowRequest: the bytes of the request the SDK builds for handle.query(statusQuery)', () => {
    const request = { namespace: 'default', workflowId: 'sandbox-sbx-1', queryType: 'status' };
    // As WorkflowClient._queryWorkflowHandler builds it (no run id, no arguments, empty headers, reject condition NONE).
    const sdk = QueryWorkflowRequest.encode({
      queryRejectCondition: temporal.api.enums.v1.QueryRejectCondition.QUERY_REJECT_CONDITION_NONE,
      namespace: request.namespace,
      execution: { workflowId: request.workflowId, runId: undefined },
      query: { queryType: request.queryType, queryArgs: { payloads: [] }, header: { fields: {} } },
    }).finish();
    assert.equal(QUERY_REJECT_CONDITION_NONE, temporal.api.enums.v1.QueryRejectCondition.QUERY_REJECT_CONDITION_NONE);
    assert.deepEqual(encodeQueryWorkflowRequest(request), Buffer.from(sdk));
    const decoded = QueryWorkflowRequest.decode(encodeQueryWorkflowRequest(request));
    assert.equal(decoded.execution?.workflowId, 'sandbox-sbx-1');
    assert.equal(decoded.query?.queryType, 'status');
  });

  test('QueryWorkflowResponse: a result, a rejection, a link, nothing', () => {
    const result = decodeQueryWorkflowResponse(
      QueryWorkflowResponse.encode({ queryResult: { payloads: PAYLOADS }, link: { workflowEvent: { namespace: 'default', workflowId: 'w', runId: 'r' } } }).finish(),
    );
    assert.deepEqual(
      result.payloads?.map((payload) => plain(payload)),
      PAYLOADS.map((payload) => plain(Payload.decode(Payload.encode(payload).finish()))),
    );
    assert.equal(result.rejectedStatus, undefined);
    assert.equal(result.external, false);

    const rejected = decodeQueryWorkflowResponse(
      QueryWorkflowResponse.encode({ queryRejected: { status: temporal.api.enums.v1.WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_COMPLETED } }).finish(),
    );
    assert.equal(rejected.rejectedStatus, temporal.api.enums.v1.WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_COMPLETED);
    assert.equal(rejected.payloads, undefined);

    assert.deepEqual(decodeQueryWorkflowResponse(QueryWorkflowResponse.encode({ queryResult: {} }).finish()).payloads, []);
    assert.equal(decodeQueryWorkflowResponse(new Uint8Array()).payloads, undefined);
    assert.deepEqual(Payloads.decode(Payloads.encode({ payloads: [] }).finish()).payloads, []);
  });

  test('google.rpc.Status of grpc-status-details-bin: code, message and the type of each detail', () => {
    const status = google.rpc.Status.encode({
      code: 5,
      message: 'workflow not found for ID: sandbox-x',
      details: [{ type_url: 'type.googleapis.com/temporal.api.errordetails.v1.NotFoundFailure', value: text('\n\x06active') }],
    }).finish();
    assert.deepEqual(decodeRpcStatus(status), {
      code: 5,
      message: 'workflow not found for ID: sandbox-x',
      detailTypes: ['type.googleapis.com/temporal.api.errordetails.v1.NotFoundFailure'],
    });
  });

  test('the codec encrypts what it decrypts, whichever encoder wrote the inner payload', async () => {
    const key = generateCodecKey();
    const codec = new AesGcmPayloadCodec([key]);
    const sealed = await codec.encode(PAYLOADS);
    assert.deepEqual(
      (await codec.decode(sealed)).map((payload) => plain(payload)),
      PAYLOADS.map((payload) => plain(payload)),
    );
  });

  test('external payload details round-trip as protobufjs wrote and read them, through the codec too', async () => {
    const { ExternalPayloadDetails } = Payload;
    // A Long, as protobufjs reads an int64.
    const long = ExternalPayloadDetails.decode(ExternalPayloadDetails.encode({ sizeBytes: 1234 as never }).finish()).sizeBytes;
    const withExternal: SdkPayload[] = [
      { metadata: { encoding: text('json/plain') }, data: text('{}'), externalPayloads: [{}] },
      { metadata: {}, data: text('x'), externalPayloads: [{ sizeBytes: long }] },
      { data: text('y'), externalPayloads: [{ sizeBytes: (2 ** 40) as never }, { sizeBytes: 0 as never }] },
    ];
    const sizes = (payload: SdkPayload) => (payload.externalPayloads ?? []).map((details) => Number(details.sizeBytes?.toString() ?? 0));
    for (const payload of withExternal) {
      const read = sameAsProtobufjs(payload);
      assert.equal(read.external, true);
      assert.deepEqual(sizes(read.payload), sizes(Payload.decode(written(payload))));
    }
    const codec = new AesGcmPayloadCodec([generateCodecKey()]);
    const back = await codec.decode(await codec.encode(withExternal));
    assert.deepEqual(back.map(sizes), withExternal.map(sizes));
    assert.deepEqual(back.map(plain), withExternal.map(plain));
  });

  test('the writer refuses an integer the wire cannot carry as given, and the codec says so as a taxonomy error', async () => {
    for (const value of [-1, 1.5, 2 ** 53, Number.NaN]) {
      assert.throws(() => new ProtobufWriter().uint(1, value), ProtobufWireError, String(value));
    }
    const codec = new AesGcmPayloadCodec([generateCodecKey()]);
    await assert.rejects(
      codec.encode([{ data: text('x'), externalPayloads: [{ sizeBytes: -5 as never }] }]),
      rejectsWith('INVALID_INPUT', /cannot be encrypted: a varint must be a non-negative safe integer, got -5/),
    );
  });

  test('a broken message is a wire error, not a wrong answer', () => {
    assert.throws(() => [...protobufFields(Uint8Array.from([0x0a, 0x05, 0x61]))], ProtobufWireError);
    assert.throws(() => [...protobufFields(Uint8Array.from([0x08]))], ProtobufWireError);
    assert.throws(() => [...protobufFields(Uint8Array.from([0x0b]))], ProtobufWireError, 'a group (wire type 3) is refused');
    assert.throws(() => [...protobufFields(Uint8Array.from([0x0c]))], ProtobufWireError, 'a group (wire type 4) is refused');
  });
});
