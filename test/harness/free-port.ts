import { freeLoopbackPort } from '../../src/adapters/free-port';
import net from 'node:net';

/** A port nothing listens on right now (the OS picks it), for servers a test starts. */
export const freePort = freeLoopbackPort;

/** True when something accepts TCP connections on 127.0.0.1:port. */
export function isListening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
