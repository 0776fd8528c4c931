import { bool, int, list, mapping, number, section, text } from '../config-schema/index.js';
import { parseTrustedProxy } from './client-address.js';

/** How the HTTP server guards itself against slow, many or large requests (`http:` in baton.yaml). */
export interface HttpLimits {
  /** A client must send a request's headers within this long of connecting or of its previous request. */
  headersTimeoutMs: number;
  /** A client must send a whole request (headers and body) within this long. */
  requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this long. */
  keepAliveTimeoutMs: number;
  /** Connections beyond this many are closed at once (event streams count). */
  maxConnections: number;
  /** Largest body of any route that reads one, except the forge webhooks (`webhooks.maxBodyBytes`) and the workspace callbacks. */
  maxBodyBytes: number;
  /**
   * Reverse proxies (addresses or CIDRs) whose `X-Forwarded-For` names the client, for the login
   * limiter. Empty: the socket's peer is the client, and the header is never read.
   */
  trustedProxies: string[];
}

/** The dashboard's sessions and login (`dashboard:` in baton.yaml). */
export interface DashboardSettings {
  /** A session ends after this long without a request. */
  sessionIdleMs: number;
  /** A session ends this long after login, however active. */
  sessionMaxAgeMs: number;
  /**
   * Serve the session cookie without `Secure` over plain http from anywhere, not only on loopback.
   * Anyone on the network path can then steal a session. @default false
   */
  allowInsecureHttp: boolean;
  /** Failed logins one client address may make per minute (a token that verifies always gets in). */
  loginAttemptsPerMinute: number;
  /** Failed logins all clients together may make per minute. */
  loginAttemptsPerMinuteTotal: number;
}

const ms = (seconds: number) => Math.round(seconds * 1000);

/** `http:` in baton.yaml: limits of the HTTP server, all with safe defaults. */
export const httpSection = section(
  mapping({
    headersTimeoutSeconds: number({ min: 1, default: 10, doc: "a client's request headers must arrive within this long" }),
    requestTimeoutSeconds: number({ min: 1, default: 30, doc: 'a whole request (headers and body) must arrive within this long' }),
    keepAliveTimeoutSeconds: number({ min: 0.1, default: 5, doc: 'idle keep-alive connections are closed after this long' }),
    maxConnections: int({ min: 1, default: 1024, doc: 'open connections at once (event streams included); more are closed at once' }),
    maxBodyBytes: int({
      min: 1024,
      default: 1024 * 1024,
      doc: 'largest request body of any route but the forge webhooks (webhooks.maxBodyBytes) and workspace callbacks; larger gets 413',
    }),
    trustedProxies: list(text({ doc: 'an address or CIDR, e.g. 10.0.0.0/8' }), {
      env: 'BATON_TRUSTED_PROXIES',
      doc: "reverse proxies whose X-Forwarded-For names the client (addresses or CIDRs); the login limiter counts that client's failures. Default none: the header is ignored",
    }),
  }),
  (v, ctx): HttpLimits => {
    if (v.headersTimeoutSeconds > v.requestTimeoutSeconds) {
      // Node refuses a headers timeout longer than the request timeout: say it in our words first.
      ctx.problem(
        `http.headersTimeoutSeconds (${v.headersTimeoutSeconds}) must not be longer than http.requestTimeoutSeconds (${v.requestTimeoutSeconds})`,
      );
    }
    const trustedProxies = v.trustedProxies ?? [];
    for (const entry of trustedProxies) {
      if (!parseTrustedProxy(entry))
        ctx.problem(`http.trustedProxies: "${entry.slice(0, 60)}" is not an IP address or CIDR (e.g. 10.0.0.7 or 10.0.0.0/8)`);
    }
    return {
      trustedProxies,
      headersTimeoutMs: ms(v.headersTimeoutSeconds),
      requestTimeoutMs: ms(v.requestTimeoutSeconds),
      keepAliveTimeoutMs: ms(v.keepAliveTimeoutSeconds),
      maxConnections: v.maxConnections,
      maxBodyBytes: v.maxBodyBytes,
    };
  },
);

/** Said at every start while it is true. */
export const INSECURE_HTTP_WARNING =
  'dashboard.allowInsecureHttp is true: the dashboard session cookie is sent without Secure over plain http, so anyone on the ' +
  'network path can read it and act as the logged-in token. Serve baton over HTTPS (a reverse proxy) and remove the setting.';

/** `dashboard:` in baton.yaml: sessions and login. */
export const dashboardSection = section(
  mapping({
    sessionIdleMinutes: number({ min: 1, default: 120, doc: 'a dashboard session ends after this long without a request' }),
    sessionMaxHours: number({ min: 0.1, default: 24, doc: 'a dashboard session ends this long after login, however active' }),
    allowInsecureHttp: bool({
      default: false,
      doc: 'send the session cookie without Secure over plain http from any address (default: only on loopback); warned about at every start',
    }),
    loginAttemptsPerMinute: int({
      min: 1,
      default: 10,
      doc: 'failed logins per client address and minute; more get 429 (a token that verifies always gets in)',
    }),
    loginAttemptsPerMinuteTotal: int({
      min: 1,
      default: 60,
      doc: 'failed logins of all clients together per minute; more get 429 (a token that verifies always gets in)',
    }),
  }),
  (v, ctx): DashboardSettings => {
    if (v.allowInsecureHttp) ctx.warn(INSECURE_HTTP_WARNING);
    return {
      sessionIdleMs: ms(v.sessionIdleMinutes * 60),
      sessionMaxAgeMs: ms(v.sessionMaxHours * 3600),
      allowInsecureHttp: v.allowInsecureHttp,
      loginAttemptsPerMinute: v.loginAttemptsPerMinute,
      loginAttemptsPerMinuteTotal: v.loginAttemptsPerMinuteTotal,
    };
  },
);
