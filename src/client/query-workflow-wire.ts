import type { Payload } from '@temporalio/common';
import { readPayload } from '../codec/payload-wire';
import { lengthDelimited, protobufFields, ProtobufWriter, varintValue } from '../codec/protobuf-wire';

// Field numbers from the Temporal API (temporal/api/workflowservice/v1/request_response.proto,
// query/v1/message.proto, common/v1/message.proto) and google/rpc/status.proto.
const REQUEST_NAMESPACE = 1;
const REQUEST_EXECUTION = 2;
const REQUEST_QUERY = 3;
const REQUEST_QUERY_REJECT_CONDITION = 4;
const EXECUTION_WORKFLOW_ID = 1;
const QUERY_TYPE = 1;
const QUERY_ARGS = 2;
const QUERY_HEADER = 3;
const RESPONSE_QUERY_RESULT = 1;
const RESPONSE_QUERY_REJECTED = 2;
const QUERY_REJECTED_STATUS = 1;
const PAYLOADS_PAYLOADS = 1;
const STATUS_CODE = 1;
const STATUS_MESSAGE = 2;
const STATUS_DETAILS = 3;
const ANY_TYPE_URL = 1;

/** `temporal.api.enums.v1.QueryRejectCondition.QUERY_REJECT_CONDITION_NONE`: the SDK client's default (`queryRejectCondition: 'NONE'`). */
export const QUERY_REJECT_CONDITION_NONE = 1;

/** The gRPC method of a workflow query. */
export const QUERY_WORKFLOW_PATH = '/temporal.api.workflowservice.v1.WorkflowService/QueryWorkflow';

/** The gRPC method the SDK's connect asks first to know the frontend answers; its request is the empty message. */
export const GET_SYSTEM_INFO_PATH = '/temporal.api.workflowservice.v1.WorkflowService/GetSystemInfo';

export interface QueryWorkflowRequest {
  readonly namespace: string;
  readonly workflowId: string;
  readonly queryType: string;
}

/**
 * A query without arguments or headers, byte for byte as the SDK's `handle.query(def)`
 * sends it (empty `query_args` and `header` included, reject condition NONE, no run id).
 */
export function encodeQueryWorkflowRequest(request: QueryWorkflowRequest): Buffer {
  return new ProtobufWriter()
    .string(REQUEST_NAMESPACE, request.namespace)
    .message(REQUEST_EXECUTION, (execution) => execution.string(EXECUTION_WORKFLOW_ID, request.workflowId))
    .message(REQUEST_QUERY, (query) =>
      query
        .string(QUERY_TYPE, request.queryType)
        .message(QUERY_ARGS, () => undefined)
        .message(QUERY_HEADER, () => undefined),
    )
    .uint(REQUEST_QUERY_REJECT_CONDITION, QUERY_REJECT_CONDITION_NONE)
    .finish();
}

/** What a QueryWorkflowResponse says: the result's payloads, or that the query was rejected (with the workflow's status). */
export interface QueryWorkflowResponse {
  /** `query_result.payloads`; `undefined` when the response has no `query_result`. */
  readonly payloads: readonly Payload[] | undefined;
  /** `query_rejected.status` (a WorkflowExecutionStatus) when the server rejected the query. */
  readonly rejectedStatus: number | undefined;
  /** Some payload points at external storage. */
  readonly external: boolean;
}

export function decodeQueryWorkflowResponse(message: Uint8Array): QueryWorkflowResponse {
  let payloads: Payload[] | undefined;
  let rejectedStatus: number | undefined;
  let external = false;
  for (const field of protobufFields(message)) {
    if (field.field === RESPONSE_QUERY_RESULT) {
      payloads ??= [];
      for (const entry of protobufFields(lengthDelimited(field))) {
        if (entry.field !== PAYLOADS_PAYLOADS) continue;
        const read = readPayload(lengthDelimited(entry));
        payloads.push(read.payload);
        external ||= read.external;
      }
    } else if (field.field === RESPONSE_QUERY_REJECTED) {
      rejectedStatus = 0;
      for (const entry of protobufFields(lengthDelimited(field))) if (entry.field === QUERY_REJECTED_STATUS) rejectedStatus = varintValue(entry);
    }
  }
  return { payloads, rejectedStatus, external };
}

/** A `google.rpc.Status` (the `grpc-status-details-bin` trailer): its code, message and the type of each detail. */
export interface RpcStatus {
  readonly code: number;
  readonly message: string;
  /** Each detail's `type_url`, e.g. `type.googleapis.com/temporal.api.errordetails.v1.NotFoundFailure`. */
  readonly detailTypes: readonly string[];
}

export function decodeRpcStatus(message: Uint8Array): RpcStatus {
  let code = 0;
  let text = '';
  const detailTypes: string[] = [];
  for (const field of protobufFields(message)) {
    if (field.field === STATUS_CODE) code = varintValue(field);
    else if (field.field === STATUS_MESSAGE) text = lengthDelimited(field).toString('utf8');
    else if (field.field === STATUS_DETAILS) {
      let typeUrl = '';
      for (const part of protobufFields(lengthDelimited(field))) if (part.field === ANY_TYPE_URL) typeUrl = lengthDelimited(part).toString('utf8');
      detailTypes.push(typeUrl);
    }
  }
  return { code, message: text, detailTypes };
}
