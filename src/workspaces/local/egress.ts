import fs from 'node:fs';
import path from 'node:path';
import { BATON_HOST, batonPathsFor, createEgressGate, type AllowRule, type EgressGate, type EgressRefusal } from '../../egress/index.js';
import type { WorkspaceSpec } from '../types.js';
import { SANDBOX_EGRESS_DIR } from './sandbox.js';

/** How the local provider contains a run's network (see src/egress/). */
export interface LocalEgressOptions {
  /** The run's allow-list. @default none: only baton's own callbacks */
  rules?: (spec: WorkspaceSpec) => AllowRule[];
  /** `host:port` runs never reach, whatever a rule says, and that `/ready` proves unreachable: baton's listener, its database. */
  deny?: readonly { host: string; port: number }[];
  /** Each refusal, for the run's log and the counter. */
  onRefused?: (run: { runId: number; stage: string; workspace: string }, refusal: EgressRefusal) => void;
}

/** What a run's gate is made from, kept as `egress.json` beside it so a restarted baton opens it again. */
interface GateRecord {
  runId: number;
  stage: string;
  workspace: string;
  /** Baton's base URL the run's callbacks go to, or null (the readiness check). */
  baton: string | null;
  rules: AllowRule[];
  /** The run's user: the socket is its alone. */
  owner?: { uid: number; gid: number };
}

/** Inside the sandbox, 127.0.0.1 of its own network namespace: the runner's relay to the gate. */
export const RELAY_PORT = 3128;
const RECORD = 'egress.json';
const SOCKET = 'egress.sock';
/** The directory of a workspace that holds the gate's socket; bound into the sandbox. */
export const EGRESS_DIR = 'egress';

export interface RunGates {
  /**
   * Opens the gate of the run in `dir` (its `egress/` directory must exist) and returns the run's
   * variables for it. Without a spec (the readiness check) nothing is allowed, not even baton.
   */
  open(dir: string, spec?: WorkspaceSpec, owner?: { uid: number; gid: number }): Promise<Record<string, string>>;
  /** Opens again the gates of runs whose directories hold a record and whose runners `alive` says live. */
  reopen(root: string, alive: (dir: string) => boolean): Promise<void>;
  close(dir: string): Promise<void>;
  closeAll(): Promise<void>;
  /** `BATON_CHECK_UNREACHABLE` for the readiness check. */
  readonly unreachable: string;
}

export function createRunGates(options: { egress: LocalEgressOptions; onError: (message: string, error: unknown) => void }): RunGates {
  const gates = new Map<string, Promise<EgressGate>>();

  const start = (dir: string, record: GateRecord) => {
    const socketPath = path.join(dir, EGRESS_DIR, SOCKET);
    const gate = createEgressGate({
      socketPath,
      rules: record.rules,
      baton: record.baton ? { origin: record.baton, allowPath: batonPathsFor(record.runId) } : undefined,
      deny: options.egress.deny,
      owner: record.owner,
      // The readiness check's refusals are its proof, not a run's event.
      onRefused: record.baton
        ? (refusal) => options.egress.onRefused?.({ runId: record.runId, stage: record.stage, workspace: record.workspace }, refusal)
        : undefined,
    });
    gates.set(dir, gate);
    gate.catch(() => gates.delete(dir));
    return gate;
  };

  const close = async (dir: string) => {
    const gate = gates.get(dir);
    gates.delete(dir);
    await gate?.then((g) => g.close()).catch(() => {});
  };

  return {
    unreachable: (options.egress.deny ?? [])
      .map(({ host, port }) => (host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`))
      .join(','),
    async open(dir, spec, owner) {
      await close(dir);
      const callback = spec ? new URL(spec.callbackUrl) : null;
      const suffix = callback ? /\/api\/runs\/\d+\/complete\/?$/.exec(callback.pathname)?.[0] : undefined;
      const record: GateRecord = {
        runId: spec?.runId ?? 0,
        stage: spec?.stage ?? '',
        workspace: spec?.name ?? path.basename(dir),
        // Baton's base: the callback URL without its /api/runs/<id>/complete.
        baton: callback && suffix ? `${callback.origin}${callback.pathname.slice(0, -suffix.length)}` : null,
        rules: spec ? (options.egress.rules?.(spec) ?? []) : [],
        ...(owner ? { owner } : {}),
      };
      fs.writeFileSync(path.join(dir, RECORD), JSON.stringify(record), { mode: 0o600 });
      await start(dir, record);
      const proxy = `http://127.0.0.1:${RELAY_PORT}`;
      return {
        BATON_EGRESS_SOCKET: `${SANDBOX_EGRESS_DIR}/${SOCKET}`,
        BATON_EGRESS_PORT: String(RELAY_PORT),
        HTTPS_PROXY: proxy,
        https_proxy: proxy,
        HTTP_PROXY: proxy,
        http_proxy: proxy,
        ALL_PROXY: proxy,
        all_proxy: proxy,
        NO_PROXY: noProxy(record.rules),
        no_proxy: noProxy(record.rules),
        ...(suffix ? { CALLBACK_URL: `http://${BATON_HOST}${suffix}` } : {}),
        // The forge gateway is on baton's listener too: the run reaches it as baton.internal.
        ...gatewayEnv(record.baton, spec?.forgeUrl, spec?.cloneUrl),
      };
    },
    async reopen(root, alive) {
      let entries: string[];
      try {
        entries = fs.readdirSync(root);
      } catch {
        return;
      }
      for (const name of entries) {
        const dir = path.join(root, name);
        if (gates.has(dir) || !alive(dir)) continue;
        let record: GateRecord;
        try {
          record = JSON.parse(fs.readFileSync(path.join(dir, RECORD), 'utf8')) as GateRecord;
        } catch {
          continue;
        }
        await start(dir, record).catch((err) => options.onError(`the egress gate of workspace ${name} could not be opened again`, err));
      }
    },
    close,
    async closeAll() {
      await Promise.all([...gates.keys()].map(close));
    },
  };
}

/**
 * The sandbox's own loopback is not the host's: servers a build starts there are reached
 * directly. A loopback host on the allow-list (a forge on baton's own machine) is the host's,
 * reachable only through the gate, so it is left out (and the sandbox's own servers on that
 * name go through the gate too).
 */
function noProxy(rules: readonly AllowRule[]): string {
  return ['localhost', '127.0.0.1', '::1'].filter((host) => !rules.some((rule) => !rule.wildcard && rule.host === host)).join(',');
}

/** GITEA_URL and REPO_CLONE_URL that point at baton's forge gateway, rewritten to baton.internal. */
function gatewayEnv(baton: string | null, forgeUrl: string | undefined, cloneUrl: string | undefined): Record<string, string> {
  if (!baton) return {};
  const base = `${baton}/gateway`;
  const env: Record<string, string> = {};
  if (forgeUrl === base) env.GITEA_URL = `http://${BATON_HOST}/gateway`;
  if (cloneUrl?.startsWith(`${base}/`)) env.REPO_CLONE_URL = `http://${BATON_HOST}${cloneUrl.slice(baton.length)}`;
  return env;
}
