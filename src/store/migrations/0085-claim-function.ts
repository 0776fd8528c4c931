import type { Migration } from './types.js';

/**
 * The PostgreSQL claim as a function (runs/postgres-statements.ts `CLAIM`): one round trip that
 * takes the `dispatch_state` lock, then counts the slots in use and claims, in a statement of its
 * own whose snapshot is taken under that lock (a single statement that also took the lock would
 * count with a snapshot from before it, and could overshoot the limit). PL/pgSQL keeps the plans,
 * where the same two statements sent as one simple query were planned at every claim (more time
 * than they took to run).
 *
 * `enable_bitmapscan = off` for the function only: a bitmap scan never marks dead index entries,
 * so the count of slots in use visited every dead version of a claimed run since the last vacuum;
 * an index scan marks them once and skips them after. `synchronous_commit` is off for the claim's
 * transaction: why a claim may skip the WAL flush is told at `CLAIM` in postgres-statements.ts.
 *
 * Statuses are literals, as in every migration: a migration stays as it landed.
 */
export const claimFunction: Migration = {
  name: '0085-claim-function',
  sqlite: [],
  postgres: [
    `CREATE FUNCTION baton_claim_runs(p_now bigint, p_max bigint, p_concurrency bigint, p_lease_token text, p_lease_expires_at bigint)
RETURNS TABLE (claimed_run json, claimed_event json)
LANGUAGE plpgsql
SET enable_bitmapscan = off
AS $$
DECLARE
  v_paused integer;
BEGIN
  SELECT paused INTO v_paused FROM dispatch_state WHERE id = 1 FOR UPDATE;
  IF v_paused IS DISTINCT FROM 0 THEN
    RETURN;
  END IF;
  PERFORM set_config('synchronous_commit', 'off', true);
  RETURN QUERY
  WITH candidates AS (
    SELECT id FROM runs
    WHERE status = 'queued' AND run_at <= p_now
    ORDER BY run_at, id
    LIMIT GREATEST(0, LEAST(p_max, p_concurrency - (SELECT count(*) FROM runs WHERE status IN ('provisioning', 'running'))))
    FOR UPDATE SKIP LOCKED
  ), claimed AS (
    UPDATE runs SET status = 'provisioning', attempts = runs.attempts + 1, lease_token = p_lease_token,
      lease_expires_at = p_lease_expires_at, claimed_at = p_now, updated_at = p_now
    FROM candidates WHERE runs.id = candidates.id AND runs.status = 'queued'
    RETURNING runs.*
  ), event AS (
    INSERT INTO run_events (run_id, type, from_status, to_status, data, created_at)
    SELECT claimed.id, 'run:claimed', 'queued', 'provisioning', '{"attempt":' || claimed.attempts || '}', p_now
    FROM claimed ORDER BY claimed.run_at, claimed.id
    RETURNING run_events.*
  )
  SELECT row_to_json(claimed), row_to_json(event) FROM claimed JOIN event ON event.run_id = claimed.id
  ORDER BY claimed.run_at, claimed.id;
END
$$`,
  ],
};
