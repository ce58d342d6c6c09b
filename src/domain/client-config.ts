/**
 * Settings an agent passes to an AWS SDK v3 client to reach its sandbox. Credentials
 * are fake and static: emulators accept any, and nothing real is ever handed out.
 */
export interface ClientConfig {
  readonly endpoint: string;
  readonly region: string;
  readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string };
  readonly forcePathStyle: true;
}
