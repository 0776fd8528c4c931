import type { Migration } from './types.js';

/**
 * `baton_claim_runs` (0085) joined its candidates to `runs` in the UPDATE, and the planner, not
 * knowing how many candidates a `LIMIT` of an expression yields, planned for thousands: a hash join
 * over every queued run (a sequential scan, compiled by JIT past 100,000 estimated rows) or a
 * merge join walking the primary key from the oldest run, finished ones included. A claim's cost
 * grew with the table: 400 pages with 20,000 runs queued, 1,765 pages and 50-80 ms with 100,000.
 * Now the claim collects the candidates' ids first and updates `WHERE id = ANY (ids)`, one
 * primary-key lookup each, and counts the free slots in a statement of its own (the limit is a
 * plain value then): 40 pages whatever the queue holds.
 *
 * `plan_cache_mode = force_generic_plan`: every statement here has one right plan whatever the
 * arguments (the queue index in order, the slot index, the primary key), and PL/pgSQL otherwise
 * planned them again at most calls, which took longer than running them (a claim of one run went
 * from 400-500 µs to 230-270 µs). JIT off: it compiles for estimates, and a claim's are guesses.
 *
 * Everything else is as in 0085: the lock first, the slot count under it, bitmap scans off,
 * `synchronous_commit = off` for the claim's transaction.
 */
export const claimByIds: Migration = {
  name: '0086-claim-by-ids',
  sqlite: [],
  postgres: [
    `CREATE OR REPLACE FUNCTION baton_claim_runs(p_now bigint, p_max bigint, p_concurrency bigint, p_lease_token text, p_lease_expires_at bigint)
RETURNS TABLE (claimed_run json, claimed_event json)
LANGUAGE plpgsql
SET enable_bitmapscan = off
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
  v_paused integer;
  v_ids bigint[];
  v_free bigint;
BEGIN
  SELECT paused INTO v_paused FROM dispatch_state WHERE id = 1 FOR UPDATE;
  IF v_paused IS DISTINCT FROM 0 THEN
    RETURN;
  END IF;
  PERFORM set_config('synchronous_commit', 'off', true);
  SELECT LEAST(p_max, p_concurrency - count(*)) INTO v_free FROM runs WHERE status IN ('provisioning', 'running');
  IF v_free <= 0 THEN
    RETURN;
  END IF;
  SELECT array_agg(id) INTO v_ids FROM (
    SELECT id FROM runs
    WHERE status = 'queued' AND run_at <= p_now
    ORDER BY run_at, id
    LIMIT v_free
    FOR UPDATE SKIP LOCKED
  ) candidates;
  IF v_ids IS NULL THEN
    RETURN;
  END IF;
  RETURN QUERY
  WITH claimed AS (
    UPDATE runs SET status = 'provisioning', attempts = runs.attempts + 1, lease_token = p_lease_token,
      lease_expires_at = p_lease_expires_at, claimed_at = p_now, updated_at = p_now
    WHERE runs.id = ANY (v_ids) AND runs.status = 'queued'
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
