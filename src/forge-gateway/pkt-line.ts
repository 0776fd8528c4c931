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

/** The commands, or an error text when the request is not shaped like a push. */
export function readRefUpdates(body: Uint8Array): { updates: RefUpdate[] } | { error: string } {
  const updates: RefUpdate[] = [];
  let at = 0;
  const text = (from: number, to: number) => Buffer.from(body.subarray(from, to)).toString('latin1');
  for (;;) {
    if (at + 4 > body.length) return { error: 'the push ended before its flush packet' };
    const length = Number.parseInt(text(at, at + 4), 16);
    if (!Number.isInteger(length) || !/^[0-9a-f]{4}$/i.test(text(at, at + 4))) return { error: 'bad pkt-line length' };
    if (length === 0) return { updates };
    if (length < 4 || at + length > body.length) return { error: 'bad pkt-line length' };
    let line = text(at + 4, at + length);
    at += length;
    const nul = line.indexOf('\0');
    if (nul >= 0) line = line.slice(0, nul);
    line = line.replace(/\n$/, '');
    // A push certificate or shallow lines are not ref updates: a gateway that cannot read the
    // push refuses it rather than let unknown commands through.
    const match = /^([0-9a-f]{40,64}) ([0-9a-f]{40,64}) (refs\/\S+)$/.exec(line);
    if (!match) return { error: `unexpected push command: ${line.slice(0, 80)}` };
    updates.push({ oldOid: match[1]!, newOid: match[2]!, ref: match[3]! });
  }
}
