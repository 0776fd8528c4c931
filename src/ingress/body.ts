import { WebhookError } from './errors.js';

/**
 * Reads the raw request body, counting bytes as they stream in: Content-Length is checked first
 * as a shortcut but never trusted (it may be absent with chunked encoding, or lie).
 */
export async function readBodyWithLimit(request: Request, limit: number): Promise<Uint8Array> {
  const declared = request.headers.get('content-length');
  if (declared !== null && /^\d+$/.test(declared) && Number(declared) > limit) {
    throw new WebhookError(413, `body is larger than the limit of ${limit} bytes`);
  }
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > limit) {
        await reader.cancel().catch(() => {});
        throw new WebhookError(413, `body is larger than the limit of ${limit} bytes`);
      }
      chunks.push(value);
    }
  } catch (err) {
    if (err instanceof WebhookError) throw err;
    throw new WebhookError(400, 'could not read the request body', { cause: err });
  }
  if (chunks.length === 1) return chunks[0]!;
  const body = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return body;
}
