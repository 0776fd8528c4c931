import { createHash } from 'node:crypto';
import type { WorkspaceSpec } from '../types.js';
import type { CoderWorkspace } from './api-types.js';
import type { Clock, CoderClient } from './client.js';

/**
 * The parameter that says whose a workspace is: SHA-256 (hex) of the callback token its runner was
 * started with, never the token. Read back from the build (`GET /workspacebuilds/{id}/parameters`)
 * before a workspace of a run's name is adopted, so a run whose database was restored from a
 * backup (which gives run ids, and so names, out again) never takes over the live workspace of
 * the run it forgot. Sent only when the template declares it: older Coder releases refuse a
 * parameter the template lacks (codersdk `ValidateWorkspaceBuildParameters`, "workspace build
 * parameter is not defined in the template"), current ones drop it (coderd/wsbuilder
 * `getClassicParameters`, coderd/dynamicparameters `ResolveParameters`).
 */
export const IDENTITY_PARAMETER = 'callback_token_hash';

/** How long the template's active version is trusted before it is asked again. */
const TEMPLATE_RECHECK_MS = 60_000;

/** SHA-256 (hex) of a callback token, as the runs store it (runs/callback-tokens.ts `hashCallbackToken`). */
export function tokenHashOf(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** `own`: made for this run; `other`: for another run; `unknown`: it does not say. */
export type WorkspaceIdentity = 'own' | 'other' | 'unknown';

export interface IdentityCheck {
  /** Whether the template version a create uses declares `callback_token_hash`. */
  templateDeclaresIdentity(): Promise<boolean>;
  /**
   * Whose the workspace is, from the identity its latest build was made with: `own` when it is
   * the hash of this attempt's token or of an earlier attempt's the engine kept, `other` when it
   * is any other, `unknown` when it carries none (a template without the parameter, a workspace an
   * older baton made) or the spec asks for no check (`adoptableTokenHashes` undefined).
   */
  identityOf(ws: CoderWorkspace, spec: WorkspaceSpec): Promise<WorkspaceIdentity>;
}

export function createIdentityCheck(options: {
  client: CoderClient;
  clock: Clock;
  templateId?: string;
  templateVersionId?: string;
  /** Told when a workspace is another run's, or says nothing of whose it is. */
  onWarning?: (message: string) => void;
}): IdentityCheck {
  const { client, clock } = options;
  // Versions never change, so what one declares is kept; the template's active version is asked
  // again after TEMPLATE_RECHECK_MS, so a template pushed with the parameter is used within a minute.
  const declaresByVersion = new Map<string, boolean>();
  let activeVersion: { id: string; at: number } | undefined;

  return {
    async templateDeclaresIdentity() {
      let versionId = options.templateVersionId;
      if (!versionId) {
        if (!activeVersion || clock.now() - activeVersion.at >= TEMPLATE_RECHECK_MS) {
          const template = await client.getTemplate(options.templateId as string);
          // Not visible: the create itself says what is wrong.
          if (!template) return false;
          activeVersion = { id: template.active_version_id, at: clock.now() };
        }
        versionId = activeVersion.id;
      }
      let declared = declaresByVersion.get(versionId);
      if (declared === undefined) {
        const parameters = await client.getTemplateVersionParameters(versionId);
        declared = parameters?.some((p) => p.name === IDENTITY_PARAMETER) ?? false;
        declaresByVersion.set(versionId, declared);
      }
      return declared;
    },

    async identityOf(ws, spec) {
      if (spec.adoptableTokenHashes === undefined) return 'unknown';
      // The answer holds the workspace's secrets too: only the hash is read from it.
      const parameters = await client.getBuildParameters(ws.latest_build.id);
      const recorded = parameters?.find((p) => p.name === IDENTITY_PARAMETER)?.value ?? '';
      if (!recorded) {
        options.onWarning?.(
          `Coder workspace ${ws.name} carries no ${IDENTITY_PARAMETER} (its template predates it, or an older baton made it): whose it is goes by its name and age, so after a database restore it may be another run's; push the current deploy/coder/ template`,
        );
        return 'unknown';
      }
      if (recorded === tokenHashOf(spec.callbackToken) || spec.adoptableTokenHashes.includes(recorded)) return 'own';
      options.onWarning?.(
        `Coder workspace ${ws.name} was made for another run (its ${IDENTITY_PARAMETER} is none of run ${spec.runId}'s tokens, as after a database restore); it is deleted and made again`,
      );
      return 'other';
    },
  };
}
