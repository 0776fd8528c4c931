export { findRule, nonPublicRange, normalizeHost, originRule, parseAllowRule, type AllowRule } from './allow-list.js';
export { egressSection, CLAUDE_CODE_HOSTS, type EgressSettings } from './config-section.js';
export { BATON_HOST, createEgressGate, type EgressGate, type EgressGateOptions, type EgressRefusal } from './gate.js';
export { batonPathsFor, runAllowList } from './run-allow-list.js';
