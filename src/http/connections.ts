import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { AppError } from '../lib/errors.ts';
import { rawProblem } from './error-handler.ts';

/**
 * At most `max` open connections (MAX_CONNECTIONS). One more is answered 503 SERVICE_UNAVAILABLE
 * (problem+json, Retry-After: 1) and closed without being read, so a flood of connections cannot
 * exhaust memory or file descriptors, and a client still learns why (net.Server's maxConnections
 * would drop it without a word). The HTTP server's own connection listener runs only for accepted ones.
 */
export function capConnections(server: Server, max: number): void {
  const listeners = server.listeners('connection') as Array<(socket: Socket) => void>;
  server.removeAllListeners('connection');
  let open = 0;
  server.on('connection', (socket: Socket) => {
    if (open >= max) {
      socket.on('error', () => {}); // the client may already be gone
      // Read and discard what the client sends, so its FIN is seen and the socket closes (server.close() waits for it);
      // a client that never closes is cut after a second.
      socket.resume();
      setTimeout(() => socket.destroy(), 1000).unref();
      socket.end(
        rawProblem(new AppError('SERVICE_UNAVAILABLE', 'The service has too many open connections; retry shortly', { headers: { 'retry-after': '1' } })),
      );
      return;
    }
    open++;
    socket.once('close', () => {
      open--;
    });
    for (const listener of listeners) listener.call(server, socket);
  });
}
