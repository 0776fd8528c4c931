/**
 * The HTTP kit every Hono app of baton stands on (the API and dashboard in `http/`, the forge
 * webhooks in `ingress/`): the error class and its one envelope, the error handler, the body
 * limit and the security headers. It knows no route and no service.
 */
export { errorBody, errorHandler, HttpError, notFound, type ErrorEnvelope, type HttpErrorStatus } from './errors.js';
export { limitBody } from './body-limit.js';
export { securityHeaders } from './security-headers.js';
