import { DockerContainerBroker } from '../docker';

/** Asks the engine at DOCKER_HOST (or the default socket) who it is, through the broker. */
export async function pingDockerEngine(dockerHost: string | undefined): Promise<string> {
  const engine = await new DockerContainerBroker({ dockerHost }).ping();
  return `engine ${engine.version} at ${engine.endpoint}`;
}
