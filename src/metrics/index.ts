export {
  createMetricsRegistry,
  DEFAULT_SECONDS_BUCKETS,
  type Counter,
  type Gauge,
  type Histogram,
  type Labels,
  type MetricsRegistry,
} from './registry.js';
