import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  path: string;
  authorization: string | undefined;
  body: Record<string, unknown>;
}

export interface CallbackReceiverOptions {
  runId?: number;
  token: string;
  /** Completion requests answered 500 before the first 200. @default 2 */
  failFirst?: number;
  /** Answer every completion with this status instead (e.g. 401). */
  fixedStatus?: number;
}

export interface CallbackReceiver {
  /** Full completion URL, `/api/runs/<id>/complete`. */
  readonly callbackUrl: string;
  /** Every completion request, including the refused ones. */
  readonly completions: ReceivedRequest[];
  readonly progress: ReceivedRequest[];
  /** Resolves with the body of the first accepted completion. */
  accepted(): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

/**
 * The server side of the runner contract, on a real port: checks the bearer token like the real
 * endpoint, answers the first completions with 500 so the runner has to retry.
 */
export async function startCallbackReceiver(options: CallbackReceiverOptions): Promise<CallbackReceiver> {
  const runId = options.runId ?? 42;
  let failuresLeft = options.failFirst ?? 2;
  const completions: ReceivedRequest[] = [];
  const progress: ReceivedRequest[] = [];
  let resolveAccepted!: (body: Record<string, unknown>) => void;
  const accepted = new Promise<Record<string, unknown>>((resolve) => {
    resolveAccepted = resolve;
  });

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      } catch {
        res.writeHead(400).end('{"error":"bad json"}');
        return;
      }
      const record = { path: req.url ?? '', authorization: req.headers.authorization, body };
      const authorized = req.headers.authorization === `Bearer ${options.token}`;
      if (req.method === 'POST' && req.url === `/api/runs/${runId}/progress`) {
        progress.push(record);
        res.writeHead(authorized ? 204 : 401).end();
        return;
      }
      if (req.method === 'POST' && req.url === `/api/runs/${runId}/complete`) {
        completions.push(record);
        if (!authorized) return void res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"unauthorized"}');
        if (options.fixedStatus) return void res.writeHead(options.fixedStatus).end();
        if (failuresLeft > 0) {
          failuresLeft -= 1;
          return void res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"try again"}');
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
        resolveAccepted(body);
        return;
      }
      res.writeHead(404).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    callbackUrl: `http://127.0.0.1:${port}/api/runs/${runId}/complete`,
    completions,
    progress,
    accepted: () => accepted,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
