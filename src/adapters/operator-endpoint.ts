/**
 * How the plane reaches a container's own emulator API (DESIGN §12): under
 * {@link OPERATOR_PATH} of its published endpoint, with the container's token in
 * {@link OPERATOR_HEADER}. The token never goes into a URL, so an error, a log line, a
 * status text or an audit row that names where a call went cannot carry it.
 */

/** The header that carries a container's operator token, on its own API and on the plane's own AWS calls. */
export const OPERATOR_HEADER = 'x-sandboxplane-operator';

/** Where a guarded emulator serves its own API, to a request carrying the token in {@link OPERATOR_HEADER}. */
export const OPERATOR_PATH = '/_sandboxplane';

/** Where the plane reaches one running container's emulator API. */
export interface OperatorAccess {
  /** The published endpoint (what agents get too). */
  readonly endpoint: string;
  /** The container's operator token; none for an emulator without a guard (its API is at the endpoint itself). */
  readonly token?: string;
}

/** The URL of `path` (`/moto-api/reset`) on the emulator's own API: it holds no token. */
export function operatorUrl(access: OperatorAccess, path: string): string {
  return `${access.endpoint}${access.token === undefined ? '' : OPERATOR_PATH}${path}`;
}

/** The headers that make a request the plane's own: the token, when the container has one. */
export function operatorHeaders(access: OperatorAccess): Record<string, string> {
  return access.token === undefined ? {} : { [OPERATOR_HEADER]: access.token };
}
