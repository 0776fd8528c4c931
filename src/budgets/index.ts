export { limitsSection } from './config-section.js';
export { runLimits, DURATION_GRACE_MS, type LimitsConfig, type StageLimits, type RunLimits } from './limits.js';
