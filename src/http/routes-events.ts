import type { HttpBindings } from '@hono/node-server';
import { Hono } from 'hono';
import type { AuthEnv } from './auth.js';
import { HttpError } from '../web-kit/index.js';
import type { EventHub } from '../live-events/index.js';

/**
 * `GET /api/events`: Server-Sent Events, one frame per `run_events` row (`id:` is the row id,
 * `data:` the event with its run). Resume with the `Last-Event-ID` header (browsers send it when
 * they reconnect) or `?lastEventId=`; `?run=ID` limits the stream to one run.
 */
export function eventRoutes(hub: EventHub): Hono<AuthEnv> {
  const app = new Hono<AuthEnv>();
  app.get('/api/events', (c) => {
    const lastEventId = c.req.header('last-event-id') ?? c.req.query('lastEventId');
    const run = c.req.query('run');
    const afterId = lastEventId === undefined || lastEventId === '' ? undefined : whole('Last-Event-ID', lastEventId, 0);
    const runId = run === undefined ? undefined : whole('run', run, 1);
    // Under @hono/node-server the socket is at hand: a client dropped for falling behind is cut off
    // at once instead of being sent what is already queued for it.
    const outgoing = (c.env as Partial<HttpBindings> | undefined)?.outgoing;
    const disconnect = outgoing ? () => outgoing.destroy() : undefined;
    const caller = c.get('caller');
    return new Response(hub.open({ afterId, runId, disconnect, stillAllowed: caller ? () => caller.stillValid() : undefined }), {
      headers: {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        // nginx would otherwise buffer the stream.
        'x-accel-buffering': 'no',
      },
    });
  });
  return app;
}

function whole(name: string, raw: string, min: number): number {
  if (!/^\d{1,15}$/.test(raw) || Number(raw) < min)
    throw new HttpError(400, 'bad_request', `${name} must be a whole number >= ${min}, got "${raw.slice(0, 40)}"`);
  return Number(raw);
}
