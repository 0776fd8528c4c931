import { createApiClient } from './api-client.js';
import { parseCommand, subcommandOf, UsageError, type CommandGroup, type CommandSpec } from './args.js';
import { formatTime, table } from './format.js';
import { type CommandIo, visibleIo } from './io.js';

/** The parts of the API's delivery view the commands print (docs/api.md, "Deliveries inspector"). */
interface DeliveryView {
  id: number;
  deliveryId: string | null;
  source: string;
  event: string | null;
  eventType: string | null;
  repository: string | null;
  number: number | null;
  endpoint: string;
  receivedAt: number;
  processedAt: number | null;
  status: string;
  outcome: string;
  verdict: string | null;
  attempts: number;
  lastError: string | null;
  replayOf: number | null;
  runs: Array<{ id: number; url: string }>;
}

interface DeliveryDetail extends DeliveryView {
  sha256: string;
  headers: Record<string, string>;
  body: string;
  history: Array<{ at: number; type: string; detail: string | null }>;
}

const JSON_OPTION = { json: { type: 'boolean', description: 'print JSON for scripts' } } as const;
const DELIVERY_ID = ['DELIVERY'] as const;

const DELIVERIES_LS = {
  command: 'baton deliveries ls',
  summary: 'Lists stored webhook deliveries, newest first, with their verdicts (BATON_URL, BATON_TOKEN).',
  options: {
    repo: { type: 'string', value: 'OWNER/REPO', description: 'only deliveries of this repository' },
    event: { type: 'string', value: 'EVENT', description: 'only this event (issues, issue_comment, pull_request, …)' },
    verdict: {
      type: 'string',
      value: 'VERDICT',
      description: 'only this verdict (pending, started, ignored, duplicate, not_permitted, invalid, misconfigured)',
    },
    source: { type: 'string', value: 'SOURCE', description: 'only deliveries from webhook, sync or replay' },
    limit: { type: 'string', value: 'N', description: 'at most N deliveries per page' },
    cursor: { type: 'string', value: 'CURSOR', description: 'the next page, as printed after the previous one' },
    ...JSON_OPTION,
  },
} as const satisfies CommandSpec;
const DELIVERIES_SHOW = {
  command: 'baton deliveries show',
  positionals: DELIVERY_ID,
  summary: 'Shows one delivery: headers (secrets masked), body, verdict, history and the runs it started.',
  options: JSON_OPTION,
} as const satisfies CommandSpec;
const DELIVERIES_REPLAY = {
  command: 'baton deliveries replay',
  positionals: DELIVERY_ID,
  summary: 'Processes a delivery again, on purpose past the duplicate check (needs an operate token).',
  options: JSON_OPTION,
} as const satisfies CommandSpec;

export const DELIVERIES_COMMANDS: CommandGroup = {
  command: 'baton deliveries',
  summary: 'Forge webhook deliveries kept by the inbox, over the API of a running baton (BATON_URL, BATON_TOKEN).',
  subcommands: [{ ...DELIVERIES_LS, aliases: ['list'] }, DELIVERIES_SHOW, DELIVERIES_REPLAY],
};

/** `baton deliveries ls|show|replay`. */
export async function deliveriesCommand(argv: string[], rawIo: CommandIo): Promise<number> {
  // Forge and agent text is printed below: it must not drive the terminal.
  const io = visibleIo(rawIo);
  const [spec, rest] = subcommandOf(DELIVERIES_COMMANDS, argv);
  switch (spec.command) {
    case DELIVERIES_LS.command: {
      const { values } = parseCommand(DELIVERIES_LS, rest);
      checkListOptions(values);
      const query = new URLSearchParams();
      for (const key of ['repo', 'event', 'verdict', 'source', 'limit', 'cursor'] as const) {
        const value = values[key];
        if (value !== undefined) query.set(key, value);
      }
      const page = await createApiClient(io).get<{ deliveries: DeliveryView[]; nextCursor: string | null }>(
        `/api/deliveries${query.size ? `?${query}` : ''}`,
      );
      if (values.json) {
        io.out(JSON.stringify(page, null, 2));
        return 0;
      }
      if (page.deliveries.length === 0) {
        io.out('no deliveries');
        return 0;
      }
      io.out(
        table(
          ['ID', 'RECEIVED', 'SOURCE', 'EVENT', 'REPOSITORY', 'VERDICT', 'RUNS'],
          page.deliveries.map((d) => [
            d.id,
            formatTime(d.receivedAt),
            d.source,
            eventOf(d),
            target(d),
            verdictOf(d, 60),
            d.runs.length ? d.runs.map((r) => `#${r.id}`).join(',') : null,
          ]),
        ),
      );
      if (page.nextCursor) io.out(`\nmore: baton deliveries ls --cursor ${page.nextCursor}`);
      return 0;
    }
    case DELIVERIES_SHOW.command: {
      const { positionals, values } = parseCommand(DELIVERIES_SHOW, rest);
      const id = deliveryId(positionals[0], DELIVERIES_SHOW);
      const { delivery: d } = await createApiClient(io).get<{ delivery: DeliveryDetail }>(`/api/deliveries/${id}`);
      if (values.json) {
        io.out(JSON.stringify({ delivery: d }, null, 2));
        return 0;
      }
      io.out(
        table(
          ['FIELD', 'VALUE'],
          [
            ['delivery', `#${d.id} ${eventOf(d)} ${target(d) ?? ''}`.trimEnd()],
            ['source', d.replayOf === null ? d.source : `${d.source} of #${d.replayOf}`],
            ['endpoint', d.endpoint],
            ['forge id', d.deliveryId],
            ['received', formatTime(d.receivedAt)],
            ['verdict', verdictOf(d)],
            ['last error', d.lastError],
            ['processed', formatTime(d.processedAt)],
            ['attempts', d.attempts],
            ['sha256', d.sha256],
            ['runs', d.runs.length ? d.runs.map((r) => `#${r.id}`).join(', ') : null],
          ],
        ),
      );
      io.out('\nHISTORY');
      io.out(
        table(
          ['TIME', 'EVENT', 'DETAIL'],
          d.history.map((h) => [formatTime(h.at), h.type, h.detail]),
        ),
      );
      io.out('\nHEADERS');
      io.out(
        Object.entries(d.headers)
          .map(([name, value]) => `${name}: ${value}`)
          .join('\n'),
      );
      io.out(`\nBODY\n${d.body}`);
      return 0;
    }
    default: {
      const { positionals, values } = parseCommand(DELIVERIES_REPLAY, rest);
      const id = deliveryId(positionals[0], DELIVERIES_REPLAY);
      const result = await createApiClient(io).post<{ delivery: DeliveryView }>(`/api/deliveries/${id}/replay`);
      io.out(
        values.json
          ? JSON.stringify(result, null, 2)
          : `delivery #${id} replayed as delivery #${result.delivery.id}: see "baton deliveries show ${result.delivery.id}" for its verdict`,
      );
      return 0;
    }
  }
}

const SOURCES = ['webhook', 'sync', 'replay'];

/** What the server would refuse anyway, refused here with exit 2 and the option's name. */
function checkListOptions(values: { repo?: string; source?: string; limit?: string }): void {
  if (values.repo !== undefined && !/^[^/\s]+\/[^/\s]+$/.test(values.repo))
    throw new UsageError(`${DELIVERIES_LS.command}: --repo must look like OWNER/REPO, got "${values.repo}"`, DELIVERIES_LS);
  if (values.source !== undefined && !SOURCES.includes(values.source))
    throw new UsageError(`${DELIVERIES_LS.command}: --source must be one of ${SOURCES.join(', ')}, got "${values.source}"`, DELIVERIES_LS);
  if (values.limit !== undefined && (!/^\d{1,3}$/.test(values.limit) || Number(values.limit) < 1 || Number(values.limit) > 200))
    throw new UsageError(`${DELIVERIES_LS.command}: --limit must be a whole number from 1 to 200, got "${values.limit}"`, DELIVERIES_LS);
}

/** `issues (issue_label)`: the coarse event, and the finer type when it says more. */
const eventOf = (d: DeliveryView) => (d.eventType && d.eventType !== d.event ? `${d.event ?? '?'} (${d.eventType})` : (d.event ?? '?'));
const target = (d: DeliveryView) => (d.repository === null ? null : d.number === null ? d.repository : `${d.repository}#${d.number}`);

function verdictOf(d: DeliveryView, max = Infinity): string {
  const text = d.verdict ?? `${d.status}${d.attempts > 0 ? ` (attempt ${d.attempts})` : ''}`;
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function deliveryId(raw: string | undefined, spec: CommandSpec): string {
  if (!raw || !/^\d{1,15}$/.test(raw) || Number(raw) < 1) {
    throw new UsageError(`${spec.command}: needs a delivery id (a positive whole number)${raw ? `, got "${raw}"` : ''}`, spec);
  }
  return raw;
}
