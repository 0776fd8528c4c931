export { createOutbox, type Outbox, type OutboxOptions, type DeliveryReport } from './outbox.js';
export { enqueueOutbox, prepareOutboxInsert, DEFAULT_MAX_ATTEMPTS, type OutboxInsert } from './enqueue.js';
export { createReactionHandler, type ReactionPayload } from './reaction-delivery.js';
export { createReviewerHandler, createReviewerHook, REVIEWER_KIND, type ReviewerPayload } from './reviewer.js';
export { createCommentHandler, commentMarker, type CommentPayload, type CommentDeliveryResult } from './comment-delivery.js';
export {
  COMMENT_TEMPLATE_NAMES,
  COMMENT_PLACEHOLDERS,
  DEFAULT_COMMENT_TEMPLATES,
  parseCommentTemplates,
  commentsSection,
  renderCommentTemplate,
  type CommentTemplateName,
  type CommentTemplates,
} from './comment-templates.js';
export { createStatusCommentHook, type StatusCommentHookOptions } from './status-comments.js';
export { withOutboxTable, type OutboxTable, type OutboxDatabase } from './table.js';
export * from './types.js';
export { failureSentence } from './public-reasons.js';
