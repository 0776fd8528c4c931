/**
 * The ref updates at the start of a `git-receive-pack` request: pkt-lines of
 * `<old-oid> SP <new-oid> SP <refname> [NUL capabilities] LF`, ended by a flush packet (`0000`),
 * then the pack (gitprotocol-pack, "Reference Update Request"). Only the commands are read; the
 * pack is passed on untouched.
 */
export interface RefUpdate {
  oldOid: string;
  newOid: string;
  ref: string;
}

/** The commands and the capabilities the client asked for (after the first command's NUL), or an error text when the request is not shaped like a push. */
export function readRefUpdates(body: Uint8Array): { updates: RefUpdate[]; capabilities: string[] } | { error: string } {
  const updates: RefUpdate[] = [];
  let capabilities: string[] = [];
  let at = 0;
  const text = (from: number, to: number) => Buffer.from(body.subarray(from, to)).toString('latin1');
  for (;;) {
    if (at + 4 > body.length) return { error: 'the push ended before its flush packet' };
    const length = Number.parseInt(text(at, at + 4), 16);
    if (!Number.isInteger(length) || !/^[0-9a-f]{4}$/i.test(text(at, at + 4))) return { error: 'bad pkt-line length' };
    if (length === 0) return { updates, capabilities };
    if (length < 4 || at + length > body.length) return { error: 'bad pkt-line length' };
    let line = text(at + 4, at + length);
    at += length;
    const nul = line.indexOf('\0');
    if (nul >= 0) {
      if (updates.length === 0)
        capabilities = line
          .slice(nul + 1)
          .trim()
          .split(/\s+/)
          .filter(Boolean);
      line = line.slice(0, nul);
    }
    line = line.replace(/\n$/, '');
    // A shallow repository's push starts with its shallow boundaries (`*shallow` before the
    // commands; send-pack.c sends them over HTTP): they name commits, not refs.
    if (updates.length === 0 && /^shallow [0-9a-f]{40,64}$/.test(line)) continue;
    // A push certificate is not a ref update: a gateway that cannot read the push refuses it
    // rather than let unknown commands through.
    const match = /^([0-9a-f]{40,64}) ([0-9a-f]{40,64}) (refs\/\S+)$/.exec(line);
    if (!match) return { error: `unexpected push command: ${line.slice(0, 80)}` };
    updates.push({ oldOid: match[1]!, newOid: match[2]!, ref: match[3]! });
  }
}

/** One pkt-line: four hex digits of length (its own four included), then the data. */
export function pktLine(data: string | Buffer): Buffer {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  return Buffer.concat([Buffer.from((bytes.length + 4).toString(16).padStart(4, '0')), bytes]);
}

/**
 * A receive-pack answer that refuses every ref of the push with `reason` (gitprotocol-pack,
 * "Report Status": `unpack ok`, then `ng <ref> <reason>` per ref, then a flush), in side-band 1
 * when the client asked for side-band(-64k). Git shows each as `! [remote rejected] … (reason)`,
 * where a bare HTTP 403 shows only "RPC failed; HTTP 403".
 */
export function refusedPushReport(updates: readonly RefUpdate[], capabilities: readonly string[], reason: string): Buffer {
  const text = reason.replace(/[\r\n]+/g, ' ').slice(0, 900);
  const report = Buffer.concat([pktLine('unpack ok\n'), ...updates.map((u) => pktLine(`ng ${u.ref} ${text}\n`)), Buffer.from('0000')]);
  if (!capabilities.includes('side-band-64k') && !capabilities.includes('side-band')) return report;
  const chunk = capabilities.includes('side-band-64k') ? 65515 : 995;
  const bands: Buffer[] = [];
  for (let at = 0; at < report.length; at += chunk) bands.push(pktLine(Buffer.concat([Buffer.from([1]), report.subarray(at, at + chunk)])));
  return Buffer.concat([...bands, Buffer.from('0000')]);
}
