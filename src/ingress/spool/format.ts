import { createHash } from 'node:crypto';
import { DELIVERY_SOURCE, type NewDelivery } from '../inbox/index.js';

/**
 * One spooled delivery on disk: MAGIC (4 bytes), the payload's length (uint32 big-endian), the
 * first 8 bytes of its SHA-256, then the payload (the delivery as UTF-8 JSON). The checksum is
 * what tells a record written whole from the torn tail a crash in mid-append leaves behind (that
 * record was never answered 2xx: it is answered only after the fsync).
 */
const MAGIC = Buffer.from('BSP1', 'latin1');
const HEADER_BYTES = MAGIC.length + 4 + 8;
/** Far above any webhook body (webhooks.maxBodyBytes is checked before a delivery gets here). */
const MAX_RECORD_BYTES = 256 * 1024 * 1024;

export function encodeRecord(delivery: NewDelivery): Buffer {
  const payload = Buffer.from(JSON.stringify(delivery), 'utf8');
  const header = Buffer.alloc(HEADER_BYTES);
  MAGIC.copy(header, 0);
  header.writeUInt32BE(payload.length, MAGIC.length);
  checksum(payload).copy(header, MAGIC.length + 4);
  return Buffer.concat([header, payload]);
}

export interface DecodedRecords {
  records: Array<{ delivery: NewDelivery; end: number }>;
  /** Where the valid records end; below `buffer.length` when a torn or corrupt record follows. */
  validEnd: number;
}

/** The whole records of `buffer` from `offset` on, each with the offset just past it. */
export function decodeRecords(buffer: Buffer, offset = 0): DecodedRecords {
  const records: DecodedRecords['records'] = [];
  let at = offset;
  while (at + HEADER_BYTES <= buffer.length) {
    if (!buffer.subarray(at, at + MAGIC.length).equals(MAGIC)) break;
    const length = buffer.readUInt32BE(at + MAGIC.length);
    const end = at + HEADER_BYTES + length;
    if (length > MAX_RECORD_BYTES || end > buffer.length) break;
    const payload = buffer.subarray(at + HEADER_BYTES, end);
    if (!checksum(payload).equals(buffer.subarray(at + MAGIC.length + 4, at + HEADER_BYTES))) break;
    const delivery = parseDelivery(payload);
    if (!delivery) break;
    records.push({ delivery, end });
    at = end;
  }
  return { records, validEnd: at };
}

function checksum(payload: Buffer): Buffer {
  return createHash('sha256').update(payload).digest().subarray(0, 8);
}

function parseDelivery(payload: Buffer): NewDelivery | null {
  let value: unknown;
  try {
    value = JSON.parse(payload.toString('utf8'));
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const d = value as Record<string, unknown>;
  const stringOrNull = (v: unknown) => v === null || typeof v === 'string';
  if (
    d.source !== DELIVERY_SOURCE.webhook ||
    typeof d.endpoint !== 'string' ||
    typeof d.body !== 'string' ||
    typeof d.headers !== 'object' ||
    d.headers === null ||
    ![d.deliveryId, d.event, d.eventType, d.repository].every(stringOrNull) ||
    !(d.number === null || typeof d.number === 'number') ||
    typeof d.receivedAt !== 'number'
  ) {
    return null;
  }
  return d as unknown as NewDelivery;
}
