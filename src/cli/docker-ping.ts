import Docker from 'dockerode';

/** Temporary: replaced by the broker's ping once src/docker lands. */
export async function pingDockerEngine(dockerHost: string | undefined): Promise<string> {
  const socketPath = dockerHost?.startsWith('unix://') ? dockerHost.slice('unix://'.length) : '/var/run/docker.sock';
  const docker = new Docker({ socketPath });
  const version = (await docker.version()) as { Version?: string };
  return `engine ${version.Version ?? 'unknown version'} at ${dockerHost ?? 'unix:///var/run/docker.sock'}`;
}
