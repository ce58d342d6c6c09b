/**
 * A container's operator endpoint (DESIGN §12): its published endpoint under
 * `/_sandboxplane/<token>`, where the emulator serves the plane alone. The token is a
 * secret: no error, log line or status text may carry it ({@link withoutToken}).
 */

const OPERATOR_PATH = '/_sandboxplane/';

/** Where the plane reaches one running container: its operator endpoint and token, and its published endpoint. */
export interface OperatorAccess {
  readonly operatorEndpoint: string;
  readonly endpoint: string;
  readonly token: string;
}

/** The operator endpoint of a published endpoint and its container's token. */
export function operatorEndpointOf(endpoint: string, token: string): string {
  return `${endpoint}${OPERATOR_PATH}${token}`;
}

/** The parts of an operator endpoint; `undefined` for an endpoint without a token. */
export function accessOf(operatorEndpoint: string): OperatorAccess | undefined {
  const at = operatorEndpoint.indexOf(OPERATOR_PATH);
  if (at < 0) return undefined;
  return { operatorEndpoint, endpoint: operatorEndpoint.slice(0, at), token: operatorEndpoint.slice(at + OPERATOR_PATH.length) };
}

/** `text` with every operator token cut out: what an error, a log or a status may say of an endpoint. */
export function withoutToken(text: string): string {
  return text.replace(/\/_sandboxplane\/[^/\s'"]+/g, '/_sandboxplane/…');
}
