export { createEventHub, type EventHub, type EventHubOptions, type EventStreamRequest } from './event-hub.js';
export { liveUsage, logLines, reportedPrompt, runView } from './run-view.js';
export { forgeItemUrl, type ForgeItemRef, type ForgeWebRoots } from './forge-links.js';
