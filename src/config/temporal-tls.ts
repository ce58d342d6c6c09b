import fs from 'node:fs';
import { z } from 'zod';

/**
 * mTLS to the Temporal frontend (DESIGN §18): the client certificate this process presents,
 * its key, the CA that signed the server's certificate, and the name to check it against.
 * `scripts/cluster.sh` makes them (`.data/cluster/tls/`); the dev server needs none.
 */
export interface TemporalTlsSettings {
  /** `SANDBOXPLANE_TEMPORAL_TLS_CERT`: the client certificate (PEM); `undefined` for TLS without one. */
  readonly certPath: string | undefined;
  /** `SANDBOXPLANE_TEMPORAL_TLS_KEY`: its private key (PEM). */
  readonly keyPath: string | undefined;
  /** `SANDBOXPLANE_TEMPORAL_TLS_CA`: the CA the server's certificate must chain to (PEM); `undefined`: the system's roots. */
  readonly caPath: string | undefined;
  /** `SANDBOXPLANE_TEMPORAL_TLS_SERVER_NAME`: checked against the server's certificate instead of the address's host. */
  readonly serverName: string | undefined;
}

/** What the Temporal SDK's `tls` connection option takes (client and worker alike). */
export interface TemporalTlsOptions {
  readonly serverRootCACertificate?: Buffer;
  readonly clientCertPair?: { readonly crt: Buffer; readonly key: Buffer };
  readonly serverNameOverride?: string;
}

export const TEMPORAL_TLS_CERT_ENV = 'SANDBOXPLANE_TEMPORAL_TLS_CERT';
export const TEMPORAL_TLS_KEY_ENV = 'SANDBOXPLANE_TEMPORAL_TLS_KEY';
export const TEMPORAL_TLS_CA_ENV = 'SANDBOXPLANE_TEMPORAL_TLS_CA';
export const TEMPORAL_TLS_SERVER_NAME_ENV = 'SANDBOXPLANE_TEMPORAL_TLS_SERVER_NAME';

/** A file this process can read now, holding a PEM block whose label ends with `label` (CERTIFICATE, PRIVATE KEY). */
const pemFile = (label: string) =>
  z
    .string()
    .trim()
    .min(1, 'must not be empty when set')
    .superRefine((file, ctx) => {
      let text: string;
      try {
        text = fs.readFileSync(file, 'utf8');
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        const why = code === 'ENOENT' ? 'does not exist' : code === 'EACCES' ? 'is not readable by this user' : code === 'EISDIR' ? 'is a directory' : (err as Error).message;
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: `${file} ${why}` });
        return;
      }
      if (!new RegExp(`-----BEGIN [A-Z ]*${label}-----`).test(text)) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: `${file} holds no PEM ${label} (-----BEGIN …${label}-----)` });
      }
    });

/** The four variables, as zod fields of the configuration's schema. */
export const temporalTlsEnvShape = {
  [TEMPORAL_TLS_CERT_ENV]: pemFile('CERTIFICATE').optional().describe("client certificate (PEM) presented to Temporal's frontend; with _KEY (scripts/cluster.sh makes them; default none)"),
  [TEMPORAL_TLS_KEY_ENV]: pemFile('PRIVATE KEY').optional().describe("the client certificate's private key (PEM)"),
  [TEMPORAL_TLS_CA_ENV]: pemFile('CERTIFICATE').optional().describe("CA (PEM) the frontend's certificate must chain to (default the system's roots when TLS is on)"),
  [TEMPORAL_TLS_SERVER_NAME_ENV]: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9.-]{0,252}$/, 'must be a host name (e.g. sandboxplane-temporal)')
    .optional()
    .describe("name checked against the frontend's certificate (default the host of TEMPORAL_ADDRESS)"),
} as const;

export type TemporalTlsEnvValues = {
  readonly [TEMPORAL_TLS_CERT_ENV]?: string;
  readonly [TEMPORAL_TLS_KEY_ENV]?: string;
  readonly [TEMPORAL_TLS_CA_ENV]?: string;
  readonly [TEMPORAL_TLS_SERVER_NAME_ENV]?: string;
};

/**
 * The settings from already-parsed values: `undefined` (plain gRPC) when none is set; an
 * issue when a certificate comes without its key (or the other way round), or a server
 * name with nothing else.
 */
export function resolveTemporalTls(values: TemporalTlsEnvValues): { settings: TemporalTlsSettings | undefined; issues: { key: string; message: string }[] } {
  const certPath = values[TEMPORAL_TLS_CERT_ENV];
  const keyPath = values[TEMPORAL_TLS_KEY_ENV];
  const caPath = values[TEMPORAL_TLS_CA_ENV];
  const serverName = values[TEMPORAL_TLS_SERVER_NAME_ENV];
  const issues: { key: string; message: string }[] = [];
  if (certPath !== undefined && keyPath === undefined) issues.push({ key: TEMPORAL_TLS_KEY_ENV, message: `must be set with ${TEMPORAL_TLS_CERT_ENV} (the certificate's private key)` });
  if (keyPath !== undefined && certPath === undefined) issues.push({ key: TEMPORAL_TLS_CERT_ENV, message: `must be set with ${TEMPORAL_TLS_KEY_ENV} (the certificate the key belongs to)` });
  if (serverName !== undefined && certPath === undefined && caPath === undefined) {
    issues.push({ key: TEMPORAL_TLS_SERVER_NAME_ENV, message: `only applies with ${TEMPORAL_TLS_CA_ENV} or ${TEMPORAL_TLS_CERT_ENV} set` });
  }
  if (issues.length > 0 || (certPath === undefined && caPath === undefined)) return { settings: undefined, issues };
  return { settings: Object.freeze({ certPath, keyPath, caPath, serverName }), issues };
}

/** Reads the files of `settings` into the SDK's `tls` option (`Connection.connect`, `NativeConnection.connect`). */
export function readTemporalTls(settings: TemporalTlsSettings): TemporalTlsOptions {
  return {
    ...(settings.caPath !== undefined ? { serverRootCACertificate: fs.readFileSync(settings.caPath) } : {}),
    ...(settings.certPath !== undefined && settings.keyPath !== undefined ? { clientCertPair: { crt: fs.readFileSync(settings.certPath), key: fs.readFileSync(settings.keyPath) } } : {}),
    ...(settings.serverName !== undefined ? { serverNameOverride: settings.serverName } : {}),
  };
}
