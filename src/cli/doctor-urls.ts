import type { Config } from '../server/index.js';
import { PROBE_MS, type Line } from './doctor-lines.js';
import type { CommandIo } from './io.js';
import { isPrivateOrLoopbackUrl } from './network.js';

// baton doctor's address checks: PUBLIC_URL and CALLBACK_URL, each asked for /health.

export async function checkPublicUrl(config: Config, io: CommandIo): Promise<Line[]> {
  const url = config.publicUrl;
  if (!url) return [{ status: 'info', check: 'PUBLIC_URL', detail: 'not set: baton connect needs it to point webhooks at baton' }];
  const lines: Line[] = [];
  if (isPrivateOrLoopbackUrl(url))
    lines.push({
      status: 'warn',
      check: 'PUBLIC_URL',
      detail: `${url} is a loopback or private address`,
      fix: 'Gitea delivers there only when its admin allows it in [webhook] ALLOWED_HOST_LIST (docs/gitea.md)',
    });
  lines.push(await answers('PUBLIC_URL', url, io));
  return lines;
}

export async function checkCallbackUrl(config: Config, io: CommandIo): Promise<Line[]> {
  const url = config.callbackUrl;
  const lines: Line[] = [];
  if (config.workspaceProvider === 'coder' && isLoopback(url)) {
    lines.push({
      status: 'FAIL',
      check: 'CALLBACK_URL',
      detail: `${url} is this machine as a Coder workspace sees itself: runs could never report back`,
      fix: 'set CALLBACK_URL to the address at which workspaces reach baton',
    });
  }
  lines.push(await answers('CALLBACK_URL', url, io));
  return lines;
}

/** Whether `url/health` answers from here (which a workspace elsewhere may still not reach). */
async function answers(check: string, url: string, io: CommandIo): Promise<Line> {
  try {
    const response = await (io.fetch ?? fetch)(`${url}/health`, { signal: AbortSignal.timeout(PROBE_MS) });
    if (response.ok) return { status: 'ok', check, detail: `${url}/health answers from this machine` };
    return {
      status: 'warn',
      check,
      detail: `${url}/health answered ${response.status} from this machine`,
      fix: 'is it baton behind that address?',
    };
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name;
    return {
      status: 'warn',
      check,
      detail: `${url}/health does not answer from this machine (${cause})`,
      fix: 'start baton serve, or check the address',
    };
  }
}

function isLoopback(url: string): boolean {
  try {
    const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
    return host === 'localhost' || host === '::1' || host.startsWith('127.');
  } catch {
    return false;
  }
}
