import type { MiddlewareHandler } from 'hono';
import { secureHeaders } from 'hono/secure-headers';

/**
 * Headers on every answer, HTML and API alike. The dashboard is plain files from this server with
 * no inline script or style, so the policy allows nothing but this origin's own files and calls:
 * an injected `<script>` or `style=` does nothing, no other site may frame the pages
 * (clickjacking), nothing is content-sniffed into a script, and no URL (a run id, a query) leaks
 * to other sites through Referer. HSTS is left to the TLS terminator, which knows the hostnames.
 */
export function securityHeaders(): MiddlewareHandler {
  return secureHeaders({
    contentSecurityPolicy: {
      defaultSrc: ["'none'"],
      scriptSrc: ["'self'"],
      styleSrc: ["'self'"],
      imgSrc: ["'self'"],
      connectSrc: ["'self'"],
      formAction: ["'self'"],
      frameAncestors: ["'none'"],
      baseUri: ["'none'"],
    },
    xContentTypeOptions: 'nosniff',
    xFrameOptions: 'DENY',
    referrerPolicy: 'no-referrer',
    strictTransportSecurity: false,
  });
}
