import { afterEach, describe, expect, it } from 'vitest';
import { assertBuilt } from '../helpers/baton-bin.js';
import { expectSettled, printFigures } from './invariants.js';
import { chaosRandom, chaosTimeout, moreRounds, type Random } from './seed.js';
import { createWorld, type Delivery, type World } from './world.js';

// The forge misbehaves while baton comments on a storm of runs: 500s, 429s with Retry-After, lost
// requests (the connection dies before Gitea sees them), lost answers (Gitea posted the comment,
// the answer never arrives), slow answers (within the client's 15 s timeout, and beyond it: Gitea
// still posts after the client gave up, as Go's net/http keeps running a handler whose client
// left). Every comment must still appear exactly once, in order.
//
// Gitea itself has no API rate limit (its routers set none); a 429 comes from a reverse proxy in
// front of it (nginx `limit_req_status 429`), with `Retry-After` in seconds (RFC 9110 §10.2.3).
// The reference (../shared/reference/gitea/API.md) is silent on both.

const EVENTS_PER_ROUND = 8;
const COMMENTS = { path: /\/issues\/\d+\/comments$/ };

let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

/** Arms a seeded mix of faults on the comment endpoints; returns what it armed. */
function armFaults(w: World, rnd: Random): Record<string, number> {
  const armed = {
    '500': rnd.int(1, 4),
    '429 Retry-After 1': rnd.int(1, 3),
    'lost request': rnd.int(1, 3),
    'lost answer': rnd.int(1, 3),
    'slow 2 s': rnd.int(1, 3),
    'slow 17 s (client timeout)': rnd.int(0, 1),
  };
  // Faults are taken by the first matching request in the order armed: interleave them randomly.
  const kinds = Object.entries(armed).flatMap(([kind, n]) => Array<string>(n).fill(kind));
  for (let i = kinds.length - 1; i > 0; i--) {
    const j = rnd.int(0, i);
    [kinds[i], kinds[j]] = [kinds[j]!, kinds[i]!];
  }
  for (const kind of kinds) {
    const match = { method: rnd.chance(0.8) ? 'POST' : 'GET', ...COMMENTS };
    if (kind === '500') w.gitea.failNext(1, { ...match, status: 500 });
    else if (kind === '429 Retry-After 1') w.gitea.failNext(1, { ...match, status: 429, headers: { 'retry-after': '1' } });
    else if (kind === 'lost request') w.gitea.dropNext(1, match);
    else if (kind === 'lost answer') w.gitea.loseAnswerNext(1, match);
    else if (kind === 'slow 2 s') w.gitea.delayNext(1, 2_000, match);
    else w.gitea.delayNext(1, 17_000, match);
  }
  return armed;
}

describe('chaos: forge faults', () => {
  it(
    'every status comment is posted exactly once and in order through 500, 429, lost and slow answers',
    async () => {
      assertBuilt();
      const rnd = chaosRandom('forge faults');
      world = await createWorld({ name: 'forge', database: 'sqlite', concurrency: 4 });
      await world.start(0);
      await world.ready(0, Date.now());
      const deliveries: Delivery[] = [];
      const armed: Record<string, number> = {};
      const startedAt = Date.now();
      for (let round = 0; moreRounds(startedAt, round); round++) {
        for (const [kind, n] of Object.entries(armFaults(world, rnd))) armed[kind] = (armed[kind] ?? 0) + n;
        for (const number of world.addIssues(EVENTS_PER_ROUND)) {
          const d = world.issueOpened(number);
          deliveries.push(d);
          expect(await world.deliver(d), `delivery for #${number}: ${d.answers.join(' | ')}`).toBe(true);
        }
      }
      const sent = Date.now();
      const settled = await expectSettled(world, deliveries, { since: sent });
      const faulted = world.gitea.requests.filter(
        (r) => r.status === 'dropped' || (typeof r.status === 'number' && r.status >= 429),
      ).length;
      printFigures('forge faults', {
        seed: rnd.seed,
        events: deliveries.length,
        'faults armed': JSON.stringify(armed),
        'requests answered with a fault or dropped': faulted,
        'drain ms': settled.drainMs,
        'all comments and cleanup ms': settled.cleanMs,
      });
    },
    chaosTimeout(600_000),
  );
});
