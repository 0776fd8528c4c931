import { describe, expect, it } from 'vitest';
import { pktLine, readRefUpdates, refusedPushReport } from './pkt-line.js';

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
const Z = '0'.repeat(40);

describe('readRefUpdates', () => {
  it('reads the commands and the first one’s capabilities, skipping a shallow repository’s boundaries', () => {
    const body = Buffer.concat([
      pktLine(`shallow ${B}`),
      pktLine(`${A} ${B} refs/heads/feature/issue-1-x\0 report-status side-band-64k agent=git/2.39.5\n`),
      pktLine(`${A} ${Z} refs/heads/old\n`),
      Buffer.from('0000PACK'),
    ]);
    expect(readRefUpdates(body)).toEqual({
      updates: [
        { oldOid: A, newOid: B, ref: 'refs/heads/feature/issue-1-x' },
        { oldOid: A, newOid: Z, ref: 'refs/heads/old' },
      ],
      capabilities: ['report-status', 'side-band-64k', 'agent=git/2.39.5'],
    });
  });

  it('refuses what it cannot read: a push certificate, a shallow line among the commands, no flush', () => {
    expect(readRefUpdates(Buffer.concat([pktLine('push-cert\0report-status\n'), Buffer.from('0000')]))).toHaveProperty('error');
    const late = Buffer.concat([pktLine(`${A} ${B} refs/heads/x\0report-status\n`), pktLine(`shallow ${B}`), Buffer.from('0000')]);
    expect(readRefUpdates(late)).toHaveProperty('error');
    expect(readRefUpdates(pktLine(`${A} ${B} refs/heads/x\n`))).toEqual({ error: 'the push ended before its flush packet' });
  });
});

describe('refusedPushReport', () => {
  const updates = [{ oldOid: A, newOid: B, ref: 'refs/heads/main' }];

  it('says ng for each ref in report-status, in side-band 1 when asked', () => {
    const plain = refusedPushReport(updates, ['report-status'], 'no\nway').toString('latin1');
    expect(plain).toBe(`000eunpack ok\n001eng refs/heads/main no way\n0000`);
    const banded = refusedPushReport(updates, ['report-status', 'side-band-64k'], 'no way');
    expect(banded.subarray(0, 5).toString('latin1')).toBe(`${(plain.length + 5).toString(16).padStart(4, '0')}\u0001`);
    expect(banded.subarray(5, 5 + plain.length).toString('latin1')).toBe(plain);
    expect(banded.subarray(5 + plain.length).toString('latin1')).toBe('0000');
  });
});
