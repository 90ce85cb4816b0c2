// Node's server.close() stops the listener and closes the keep-alive connections idle at that
// moment, but a connection whose response finishes later stays open until its keep-alive
// timeout (5 s), holding the close back. Once closing, this closes each connection as soon as
// its last response is out, so the server is gone as soon as its last request is answered.

import type { Server } from 'node:http';

export class IdleConnectionCloser {
  private closing = false;

  constructor(private readonly server: Server) {
    server.on('request', (_request, response) => {
      // 'close' follows the response's detach from its socket, which then counts as idle.
      response.once('close', () => {
        if (this.closing) setImmediate(() => this.server.closeIdleConnections());
      });
    });
  }

  /** From now on, idle connections close at once and busy ones as their responses finish. */
  begin(): void {
    this.closing = true;
    this.server.closeIdleConnections();
  }
}
