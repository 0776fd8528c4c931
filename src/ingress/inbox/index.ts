export { createInboxStore, INBOX_CHANNEL, sha256Hex, subjectOf, type EarlierCopy, type InboxStore } from './store.js';
export * from './types.js';
